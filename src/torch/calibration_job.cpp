#include "shardplan/torch/calibration_job.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include "launch_store.hpp"
#include "scratch_dir.hpp"
#include "shardplan/core/atomic_file.hpp"
#include "shardplan/core/errors.hpp"
#include "shardplan/core/json_file.hpp"
#include "shardplan/core/tables_io.hpp"
#include "shardplan/costs/comm_spawn.hpp"
#include "shardplan/costs/comm_workload.hpp"
#include "shardplan/costs/provenance.hpp"
#include "shardplan/torch/compute_benchmark.hpp"

namespace shardplan {

namespace {

using nlohmann::json;

constexpr const char* kStorePrefix = "shard-plan/calibrate/";
// How long past the job's own minutes a rank waits for the next request: one set's timing at worst.
constexpr double kRequestGraceSeconds = 900.0;

std::string request_key(int64_t n) { return fmt::format("request/{}", n); }
std::string reply_key(int64_t n) { return fmt::format("reply/{}", n); }
std::string rank_key(int rank) { return fmt::format("rank/{}", rank); }
std::string finished_key(int rank) { return fmt::format("finished/{}", rank); }

// The collector of the job's device: NCCL among GPUs, Gloo among CPU ranks; none for one rank.
std::string job_backend(const ComputeBenchConfig& bench, int world_size) {
  if (world_size == 1) return "none";
  return resolve_comm_backend(bench.device == "cuda" ? "nccl" : "gloo");
}

std::string device_label(const ComputeBenchConfig& bench) {
  return bench.device == "cuda" ? fmt::format("cuda:{}", bench.device_index) : bench.device;
}

json rank_identity(const CalibrateConfig& config, const CalibrationJob& job) {
  return {{"rank", job.where.rank},
          {"host", host_name()},
          {"device", device_label(config.bench)},
          {"device_model", device_model(config.bench.device)},
          {"kernel", config.bench.kernel},
          {"command", config.command_line}};
}

json run_to_json(const CommRanksRun& run) {
  return {{"world_size", run.world_size}, {"devices_per_host", run.devices_per_host},
          {"batch_size", run.batch_size}, {"repeats", run.repeats},
          {"timeout_s", run.timeout_s},   {"launch_command", run.launch_command}};
}

CommRanksRun run_from_json(const json& j, const ScratchDir& scratch) {
  CommRanksRun run;
  run.world_size = j.at("world_size").get<int>();
  run.devices_per_host = j.at("devices_per_host").get<int>();
  run.batch_size = j.at("batch_size").get<int64_t>();
  run.repeats = j.at("repeats").get<int>();
  run.timeout_s = j.at("timeout_s").get<double>();
  run.launch_command = j.at("launch_command").get<std::string>();
  run.workloads_path = scratch.path("workloads.json");
  run.out_dir = scratch.path("timed");  // only rank 0 writes
  run.quiet = true;
  return run;
}

// This rank's part of one collection, on a connection of its own at rank 0's host and `port`: the host
// layout is the job's unless the plans' table-row-wise tables name their own.
int run_comm_rank(const CommRanksRun& run, const CalibrationJob& job, int port, const std::string& backend) {
  CommCollectConfig c;
  c.rendezvous = job.where;
  c.rendezvous.master_port = port;
  c.rendezvous.launcher_serves_store = false;  // rank 0 serves this port's store
  c.out_dir = run.out_dir;
  c.batch_size = run.batch_size;
  c.backend = backend;
  c.timeout_s = run.timeout_s;
  c.given_workloads = read_comm_workloads(run.workloads_path, run.world_size);
  c.workloads_path = run.workloads_path;
  c.samples = static_cast<int64_t>(c.given_workloads.size());
  c.repeats = run.repeats;
  const bool several_hosts = job.gpus_per_host < run.world_size;
  c.gpus_per_host = run.devices_per_host > 0 ? run.devices_per_host : several_hosts ? job.gpus_per_host : 0;
  c.quiet = run.quiet;
  c.command_line = run.launch_command;
  try {
    run_comm_collection(c);
    return 0;
  } catch (const std::exception& e) {
    spdlog::error("rank {}: timing the all-to-alls failed: {}", job.where.rank, e.what());
    return 1;
  }
}

ComputeTiming timing_from_json(const json& reply, int rank) {
  if (reply.contains("error")) {
    throw RuntimeFailure(fmt::format("rank {} failed to time a set: {}", rank, reply["error"].get<std::string>()));
  }
  ComputeTiming t;
  t.median_ms = reply.at("median_ms").get<double>();
  t.iterations_ms = reply.at("iterations_ms").get<std::vector<double>>();
  t.timed_on = reply.at("timed_on").get<std::string>();
  return t;
}

std::string timed_on(const CalibrationJob& job, const CalibrateConfig& config) {
  return fmt::format("rank {} of {}, {}", job.where.rank, host_name(), device_label(config.bench));
}

// ---- rank 0 ----

class Leader {
 public:
  Leader(LaunchStore& store, const CalibrateConfig& config, const CalibrationJob& job, std::string backend)
      : store_(store), config_(config), job_(job), backend_(std::move(backend)), local_(compute_timer(config.bench)) {}

  // Every rank's identity, refusing one started with another command line.
  json gather_ranks() {
    json ranks = json::array({rank_identity(config_, job_)});
    for (int r = 1; r < job_.where.world_size; ++r) {
      json id = json::parse(store_.get(rank_key(r)));
      if (id.value("command", "") != config_.command_line) {
        throw InputError(fmt::format("rank {} runs '{}' and rank 0 '{}': every rank must run the same command", r,
                                     id.value("command", ""), config_.command_line));
      }
      if (id.value("kernel", "") != config_.bench.kernel) {
        throw InputError(
            fmt::format("rank {} times with the {} kernel and rank 0 with {}: install the same "
                        "Python stack on every host, or pass --kernel",
                        r, id.value("kernel", ""), config_.bench.kernel));
      }
      id.erase("command");
      ranks.push_back(std::move(id));
    }
    ranks[0].erase("command");
    return ranks;
  }

  // Set k of this run goes to rank k mod W; the caller waits for it, so one rank times at a time.
  ComputeTiming time_set(const std::vector<Table>& shards, uint64_t seed) {
    const int rank = static_cast<int>(sets_++ % job_.where.world_size);
    if (rank == 0) {
      ComputeTiming t = local_(shards, seed);
      t.timed_on = timed_on(job_, config_);
      ++own_sets_;
      return t;
    }
    json tables = json::array();
    for (const Table& shard : shards) tables.push_back(table_to_json(shard));
    const int64_t n = post({{"kind", "compute"}, {"rank", rank}, {"seed", seed}, {"shards", std::move(tables)}});
    return timing_from_json(json::parse(store_.get(reply_key(n))), rank);
  }

  // Every rank joins a collection of the workloads on a port rank 0 serves.
  int time_comm(const CommRanksRun& run) {
    const int port = find_free_port("0.0.0.0");
    post({{"kind", "comm"},
          {"port", port},
          {"workloads", read_json_file(run.workloads_path)},
          {"run", run_to_json(run)}});
    return run_comm_rank(run, job_, port, backend_);
  }

  // Rank 0 serves the store: it leaves only when every rank has read that it is done.
  void finish() {
    post({{"kind", "done"}});
    for (int r = 1; r < job_.where.world_size; ++r) store_.get(finished_key(r));
  }
  void abort(const std::string& message) { post({{"kind", "abort"}, {"message", message}}); }
  int64_t own_sets() const { return own_sets_; }

 private:
  int64_t post(const json& request) {
    store_.set(request_key(requests_), request.dump());
    return requests_++;
  }

  LaunchStore& store_;
  const CalibrateConfig& config_;
  const CalibrationJob& job_;
  std::string backend_;
  ComputeTimer local_;
  int64_t requests_ = 0;
  int64_t sets_ = 0;
  int64_t own_sets_ = 0;
};

CalibrationJobOutcome lead(const std::vector<Table>& pool, CalibrateConfig config, const CalibrationJob& job,
                           LaunchStore& store, const std::string& backend) {
  Leader leader(store, config, job, backend);
  CalibrationJobOutcome outcome;
  try {
    config.job.ranks = leader.gather_ranks();
    const ComputeTimer timer = [&leader](const std::vector<Table>& shards, uint64_t seed) {
      return leader.time_set(shards, seed);
    };
    const CommTimer comm_timer =
        comm_timer_with(job.comm, [&leader](const CommRanksRun& run) { return leader.time_comm(run); });
    outcome.calibration = calibrate_cost_model(pool, config, timer, comm_timer);
  } catch (const std::exception& e) {
    leader.abort(e.what());
    throw;
  }
  leader.finish();
  outcome.sets_timed = leader.own_sets();
  return outcome;
}

// ---- the other ranks ----

json answer_compute(const json& request, const ComputeTimer& timer, const CalibrationJob& job,
                    const CalibrateConfig& config) {
  try {
    std::vector<Table> shards;
    const json& tables = request.at("shards");
    for (std::size_t i = 0; i < tables.size(); ++i) {
      shards.push_back(parse_table(tables[i], "rank 0's request", fmt::format("shards[{}]", i), i));
    }
    ComputeTiming t = timer(shards, request.at("seed").get<uint64_t>());
    return {{"median_ms", t.median_ms}, {"iterations_ms", t.iterations_ms}, {"timed_on", timed_on(job, config)}};
  } catch (const std::exception& e) {
    return {{"error", e.what()}};
  }
}

CalibrationJobOutcome serve(const CalibrateConfig& config, const CalibrationJob& job, LaunchStore& store,
                            const std::string& backend) {
  store.set(rank_key(job.where.rank), rank_identity(config, job).dump());
  const ComputeTimer timer = compute_timer(config.bench);
  CalibrationJobOutcome outcome;
  for (int64_t n = 0;; ++n) {
    const json request = json::parse(store.get(request_key(n)));
    const std::string kind = request.at("kind").get<std::string>();
    if (kind == "done") {
      store.set(finished_key(job.where.rank), "1");
      break;
    }
    if (kind == "abort") {
      throw RuntimeFailure(fmt::format("rank 0 stopped the calibration: {}", request.value("message", "")));
    }
    if (kind == "compute") {
      if (request.at("rank").get<int>() != job.where.rank) continue;
      store.set(reply_key(n), answer_compute(request, timer, job, config).dump());
      ++outcome.sets_timed;
    } else if (kind == "comm") {
      ScratchDir scratch;
      const CommRanksRun run = run_from_json(request.at("run"), scratch);
      write_file_atomically(run.workloads_path, request.at("workloads").dump());
      run_comm_rank(run, job, request.at("port").get<int>(), backend);
    }
  }
  return outcome;
}

}  // namespace

CalibrationJobOutcome calibrate_as_job(const std::vector<Table>& pool, CalibrateConfig config,
                                       const CalibrationJob& job) {
  const std::string backend = job_backend(config.bench, job.where.world_size);
  config.job.world_size = job.where.world_size;
  config.job.gpus_per_host = job.gpus_per_host;
  config.job.backend = backend;
  if (config.bench.device == "cuda") config.bench.device_index = job.where.local_rank;
  const double wait_s = config.minutes * 60.0 + job.comm.timeout_s + kRequestGraceSeconds;
  LaunchStore store(job.where, kStorePrefix, wait_s);
  if (job.where.rank == 0) return lead(pool, std::move(config), job, store, backend);
  return serve(config, job, store, backend);
}

}  // namespace shardplan
