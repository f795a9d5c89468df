#include "comm_handshake.hpp"

#include <fmt/format.h>

#include <cstring>
#include <exception>

#include "comm_collection_meta.hpp"
#include "shardplan/core/errors.hpp"
#include "shardplan/core/interrupt.hpp"
#include "shardplan/costs/provenance.hpp"

namespace shardplan::collector {

namespace {

// Settings every rank must share, as rank 0 broadcasts them; a rank with different ones would deadlock
// or measure something else.
std::vector<int64_t> shared_settings(const CommCollectConfig& config) {
  int64_t seed_bits = 0;
  std::memcpy(&seed_bits, &config.seed, sizeof(seed_bits));
  return {config.rendezvous.world_size,
          config.samples,
          config.batch_size,
          seed_bits,
          static_cast<int64_t>(config.workload.max_delay_ms * 1000.0 + 0.5),
          static_cast<int64_t>(config.workload.zero_delay_fraction * 1e6 + 0.5),
          config.workload.max_mean_shards,
          config.workload.max_skew,
          config.warmup_rounds,
          config.repeats,
          static_cast<int64_t>(config.given_workloads.empty() ? 0 : comm_workloads_digest(config.given_workloads) >> 1),
          config.gpus_per_host};
}

constexpr const char* kSharedSettingNames[] = {
    "world size",  "samples", "batch size",     "seed",    "maximum delay (us)",       "zero-delay fraction (ppm)",
    "mean shards", "skew",    "warm-up rounds", "repeats", "given workloads (digest)", "GPUs per host"};

// Rank 0's part of the start: opens the output. Returns the status every rank gets (0, or the exit code
// of rank 0's error), keeps the error itself (a SettingError names its setting) and sets the first sample
// index.
int64_t open_output(const CommCollectConfig& config, std::optional<CostDataWriter>& writer, const std::string& backend,
                    const std::vector<std::string>& hosts, int64_t& first, std::exception_ptr& error) {
  try {
    writer.emplace(config.out_dir, comm_collection_meta(config, backend, hosts));
    first = writer->existing_samples();
    return 0;
  } catch (const Error& e) {
    error = std::current_exception();
    return static_cast<int64_t>(e.code());
  }
}

// The first setting of `mine` that differs from rank 0's `theirs`, as a message; empty when none does.
std::string first_mismatch(const std::vector<int64_t>& mine, const int64_t* theirs) {
  for (std::size_t i = 0; i < mine.size(); ++i) {
    if (theirs[i] != mine[i]) {
      return fmt::format("{} differs from rank 0's ({} here, {} there)", kSharedSettingNames[i], mine[i], theirs[i]);
    }
  }
  return "";
}

// Throws the error of exit code `status`: bad input as bad input, so every rank exits alike.
[[noreturn]] void throw_with_code(int64_t status, const std::string& message) {
  if (status == static_cast<int64_t>(ExitCode::kBadInput)) throw InputError(message);
  throw RuntimeFailure(message);
}

}  // namespace

int64_t agree_on_start(const Job& job, const CommCollectConfig& config, std::optional<CostDataWriter>& writer,
                       const std::string& backend, const std::vector<std::string>& hosts) {
  std::vector<int64_t> mine = shared_settings(config);
  // [status, first sample, settings...]; status: rank 0's exit code when it cannot open the output (1 or
  // 2), so every rank exits with the same code and --spawn reports bad input as bad input.
  std::vector<int64_t> message{0, 0};
  message.insert(message.end(), mine.begin(), mine.end());
  std::exception_ptr open_error;
  if (job.rank == 0) message[0] = open_output(config, writer, backend, hosts, message[1], open_error);
  std::vector<at::Tensor> broadcast{at::tensor(message, at::kLong).to(job.long_options.device())};
  job.finish(job.group->broadcast(broadcast));
  at::Tensor received = broadcast[0].cpu();
  const int64_t* values = received.data_ptr<int64_t>();

  const std::string mismatch = first_mismatch(mine, values + 2);
  std::vector<at::Tensor> trouble{at::full({1}, mismatch.empty() ? 0 : 1, job.long_options)};
  c10d::AllreduceOptions max;
  max.reduceOp = c10d::ReduceOp::MAX;
  job.finish(job.group->allreduce(trouble, max));
  if (open_error) std::rethrow_exception(open_error);
  if (values[0] != 0)
    throw_with_code(values[0], fmt::format("rank {}: rank 0 could not open the output (see its error)", job.rank));
  if (!mismatch.empty()) {
    throw InputError(fmt::format("rank {}: {}; every rank must be started with the same options", job.rank, mismatch));
  }
  if (trouble[0].cpu().item<int64_t>() != 0) {
    throw InputError(fmt::format("rank {}: another rank was started with different options (see its error)", job.rank));
  }
  return values[1];
}

bool agree_to_stop(const Job& job) {
  std::vector<at::Tensor> flag{at::full({1}, interrupt_requested() ? 1 : 0, job.long_options)};
  c10d::AllreduceOptions options;
  options.reduceOp = c10d::ReduceOp::MAX;
  job.finish(job.group->allreduce(flag, options));
  return flag[0].cpu().item<int64_t>() > 0;
}

std::vector<std::string> exchange_host_names(const Job& job) {
  const std::string key_prefix = "shard-plan/host/";
  std::string mine = host_name();
  job.store->set(key_prefix + std::to_string(job.rank), std::vector<uint8_t>(mine.begin(), mine.end()));
  std::vector<std::string> hosts;
  if (job.rank == 0) {
    for (int r = 0; r < job.world; ++r) {
      std::vector<uint8_t> value = job.store->get(key_prefix + std::to_string(r));
      hosts.emplace_back(value.begin(), value.end());
    }
  }
  return hosts;
}

}  // namespace shardplan::collector
