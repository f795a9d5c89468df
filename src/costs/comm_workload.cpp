#include "shardplan/costs/comm_workload.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "shardplan/core/atomic_file.hpp"
#include "shardplan/core/errors.hpp"
#include "shardplan/core/json_fields.hpp"
#include "shardplan/core/json_file.hpp"
#include "shardplan/core/random.hpp"

namespace shardplan {

namespace {

constexpr int kWidthStep = 4;
constexpr int kWidthChoices = 32;  // widths 4, 8, ..., 128
constexpr int kMaxWorldSize = 4096;
constexpr double kMaxDelayLimitMs = 10'000.0;
// Stream tag so comm samples never share random numbers with another generator given the same seed.
constexpr uint64_t kCommStream = 0x636f6d6d00000000ull;  // "comm"

int max_shards_per_rank(const CommWorkloadConfig& config) { return config.max_mean_shards * config.max_skew; }

// The buffers a rank holds to time a given workload, in floats, by role: the collector's timing loop keeps
// one buffer per role, grown to the largest workload's need.
struct RankBufferFloats {
  double sent = 0.0;               // this rank's pooled embeddings, sent to every rank
  double received = 0.0;           // those every rank sends it
  double row_partials = 0.0;       // row-wise tables' partial sums and their scratch (or the replicas' gradients)
  double row_sums = 0.0;           // this rank's row-wise sums
  double host_row_partials = 0.0;  // the same two for table-row-wise tables, within the host
  double host_row_sums = 0.0;

  double bytes() const {
    double total = 0.0;
    for (double floats : {sent, received, row_partials, row_sums, host_row_partials, host_row_sums}) {
      total += floats * sizeof(float);
    }
    return total;
  }
  void grow_to(const RankBufferFloats& other) {
    sent = std::max(sent, other.sent);
    received = std::max(received, other.received);
    row_partials = std::max(row_partials, other.row_partials);
    row_sums = std::max(row_sums, other.row_sums);
    host_row_partials = std::max(host_row_partials, other.host_row_partials);
    host_row_sums = std::max(host_row_sums, other.host_row_sums);
  }
};

// Workload `index`'s table-row-wise width on its host (0: none), checked to be alike on every rank of a host.
int64_t host_table_row_width(const CommWorkload& w, std::size_t index, const std::string& source, std::size_t ranks,
                             int per_host) {
  if (w.host_rw_dims.empty()) return 0;
  if (w.host_rw_dims.size() != ranks) {
    throw InputError(
        fmt::format("{}: workloads[{}].host_rw_dims: must list the {} ranks of the world size", source, index, ranks));
  }
  if (per_host < 2 || ranks % static_cast<std::size_t>(per_host) != 0) {
    throw SettingError("GPUs per host", fmt::format("workloads with host_rw_dims need hosts of at least 2 ranks that "
                                                    "divide the world size {}, got {}",
                                                    ranks, per_host));
  }
  int64_t host_dim = 0;
  const auto host_size = static_cast<std::size_t>(per_host);
  for (std::size_t r = 0; r < ranks; ++r) {
    const int64_t first = w.host_rw_dims[r / host_size * host_size];
    if (w.host_rw_dims[r] != first) {
      throw InputError(
          fmt::format("{}: workloads[{}].host_rw_dims[{}]: must be its host's value {} (hosts of {} "
                      "ranks), got {}",
                      source, index, r, first, per_host, w.host_rw_dims[r]));
    }
    host_dim = std::max(host_dim, w.host_rw_dims[r]);
  }
  return host_dim;
}

// Each rank holds a send and a receive buffer of local_batch x (sum of widths) floats, the row-wise
// reduce-scatter's two of world x local_batch x rw_dim (or the all-reduce's gradients) and its own part,
// and the host's table-row-wise reduce-scatter's two of world x local_batch x its width and its own part.
RankBufferFloats rank_buffer_floats(const CommWorkload& w, std::size_t ranks, int per_host, int64_t local_batch,
                                    int64_t host_dim) {
  int64_t width = 0;
  for (int64_t d : w.dim_sums) width += d;
  const double rw_floats = static_cast<double>(local_batch) * static_cast<double>(w.rw_dim);
  const double host_floats = static_cast<double>(local_batch) * static_cast<double>(host_dim);
  RankBufferFloats floats;
  floats.sent = static_cast<double>(local_batch) * static_cast<double>(width);
  floats.received = floats.sent;
  floats.row_partials = std::max(2.0 * static_cast<double>(ranks) * rw_floats, static_cast<double>(w.allreduce_floats));
  floats.row_sums = rw_floats;
  floats.host_row_partials = 2.0 * static_cast<double>(ranks) * host_floats;
  floats.host_row_sums =
      per_host > 0 ? static_cast<double>(ranks / static_cast<std::size_t>(std::max(per_host, 1))) * host_floats : 0.0;
  return floats;
}

}  // namespace

void validate_comm_workload(const CommWorkloadConfig& config) {
  if (config.world_size < 2 || config.world_size > kMaxWorldSize) {
    throw SettingError("world size", fmt::format("must be in [2, {}], got {}", kMaxWorldSize, config.world_size));
  }
  if (!(config.max_delay_ms >= 0.0 && config.max_delay_ms <= kMaxDelayLimitMs)) {
    throw SettingError("maximum delay",
                       fmt::format("must be in [0, {}] ms, got {}", kMaxDelayLimitMs, config.max_delay_ms));
  }
  if (!(config.zero_delay_fraction >= 0.0 && config.zero_delay_fraction <= 1.0)) {
    throw InputError(fmt::format("zero-delay fraction must be in [0, 1], got {}", config.zero_delay_fraction));
  }
  if (config.max_mean_shards < 1 || config.max_skew < 1) {
    throw InputError(fmt::format("shards per rank and skew must be at least 1, got {} and {}", config.max_mean_shards,
                                 config.max_skew));
  }
}

int64_t max_comm_dim_sum(const CommWorkloadConfig& config) {
  return static_cast<int64_t>(max_shards_per_rank(config)) * kWidthStep * kWidthChoices;
}

CommWorkload draw_comm_workload(const CommWorkloadConfig& config, uint64_t seed, int64_t index) {
  Rng rng(derive_seed(seed ^ kCommStream, static_cast<uint64_t>(index)));
  const auto ranks = static_cast<std::size_t>(config.world_size);
  CommWorkload w;
  w.dim_sums.resize(ranks);
  w.shard_counts.resize(ranks);
  w.delays_ms.assign(ranks, 0.0);

  // Imbalance: a sample-wide level a in [0, 1]; rank r's shard count is the sample's mean count scaled
  // by a factor f = 1 + a (skew - 1) |z| (z uniform in [-1, 1]), multiplied for z >= 0 and divided for
  // z < 0. a = 0 gives every rank the same count (the widths still differ); a = 1 spreads counts over
  // mean/skew .. mean*skew, like a plan whose width balance is poor.
  w.imbalance = rng.uniform();
  const double mean = 1.0 + static_cast<double>(rng.below(static_cast<uint64_t>(config.max_mean_shards)));
  const int cap = max_shards_per_rank(config);
  for (std::size_t r = 0; r < ranks; ++r) {
    double z = 2.0 * rng.uniform() - 1.0;
    double factor = 1.0 + w.imbalance * (config.max_skew - 1) * (z < 0 ? -z : z);
    double scaled = z < 0 ? mean / factor : mean * factor;
    int count = std::clamp(static_cast<int>(scaled + 0.5), 1, cap);
    int64_t sum = 0;
    for (int s = 0; s < count; ++s) sum += kWidthStep * (1 + static_cast<int64_t>(rng.below(kWidthChoices)));
    w.shard_counts[r] = count;
    w.dim_sums[r] = sum;
  }

  // Delays: none in a `zero_delay_fraction` of samples; otherwise a sample-wide spread d ~ U[0, max]
  // and each rank uniform in [0, d], so both small and large waits are well covered.
  if (config.max_delay_ms > 0.0 && rng.uniform() >= config.zero_delay_fraction) {
    double spread = config.max_delay_ms * rng.uniform();
    for (std::size_t r = 0; r < ranks; ++r) w.delays_ms[r] = spread * rng.uniform();
  }
  return w;
}

nlohmann::json comm_workloads_to_json(int world_size, const std::vector<CommWorkload>& workloads) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& w : workloads) {
    nlohmann::json entry = {{"dim_sums", w.dim_sums}, {"delays_ms", w.delays_ms}};
    if (w.rw_dim > 0) entry["rw_dim"] = w.rw_dim;
    if (w.allreduce_floats > 0) entry["allreduce_floats"] = w.allreduce_floats;
    if (!w.host_rw_dims.empty()) entry["host_rw_dims"] = w.host_rw_dims;
    list.push_back(std::move(entry));
  }
  return {{"format", kCommWorkloadsFormat}, {"world_size", world_size}, {"workloads", list}};
}

std::vector<CommWorkload> comm_workloads_from_json(const nlohmann::json& doc, const std::string& source,
                                                   int& world_size) {
  read_object(doc, source, "(top level)");
  const auto& format = require_member(doc, "format", source, "");
  if (read_string(format, source, "format") != kCommWorkloadsFormat) {
    throw_field_error(source, "format", fmt::format("must be \"{}\"", kCommWorkloadsFormat), format);
  }
  world_size = static_cast<int>(
      read_int64(require_member(doc, "world_size", source, ""), source, "world_size", 2, kMaxWorldSize));
  const auto& list = read_array(require_member(doc, "workloads", source, ""), source, "workloads");
  if (list.empty()) throw_field_error(source, "workloads", "must list at least one workload", list);
  std::vector<CommWorkload> workloads;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string path = fmt::format("workloads[{}]", i);
    read_object(list[i], source, path);
    CommWorkload w;
    for (const char* field : {"dim_sums", "delays_ms"}) {
      const std::string field_path = path + "." + field;
      const auto& values = read_array(require_member(list[i], field, source, path), source, field_path);
      if (values.size() != static_cast<std::size_t>(world_size)) {
        throw_field_error(source, field_path, fmt::format("must list the {} ranks of world_size", world_size), values);
      }
      for (std::size_t r = 0; r < values.size(); ++r) {
        const std::string value_path = fmt::format("{}[{}]", field_path, r);
        if (field == std::string("dim_sums")) {
          w.dim_sums.push_back(read_int64(values[r], source, value_path, 0, kMaxGivenDimSum));
        } else {
          w.delays_ms.push_back(read_double(values[r], source, value_path, 0.0, kMaxGivenDelayMs));
        }
      }
    }
    if (const auto* rw = find_member(list[i], "rw_dim")) {
      w.rw_dim = read_int64(*rw, source, path + ".rw_dim", 0, kMaxGivenDimSum);
    }
    if (const auto* floats = find_member(list[i], "allreduce_floats")) {
      w.allreduce_floats = read_int64(*floats, source, path + ".allreduce_floats", 0, kMaxGivenAllreduceFloats);
    }
    if (const auto* host = find_member(list[i], "host_rw_dims")) {
      const std::string field_path = path + ".host_rw_dims";
      const auto& values = read_array(*host, source, field_path);
      if (values.size() != static_cast<std::size_t>(world_size)) {
        throw_field_error(source, field_path, fmt::format("must list the {} ranks of world_size", world_size), values);
      }
      for (std::size_t r = 0; r < values.size(); ++r) {
        w.host_rw_dims.push_back(
            read_int64(values[r], source, fmt::format("{}[{}]", field_path, r), 0, kMaxGivenDimSum));
      }
    }
    w.shard_counts.assign(w.dim_sums.size(), 0);  // not known for a given width
    workloads.push_back(std::move(w));
  }
  return workloads;
}

std::vector<CommWorkload> read_comm_workloads(const std::string& path, int world_size) {
  int file_world_size = 0;
  std::vector<CommWorkload> workloads = comm_workloads_from_json(read_json_file(path), path, file_world_size);
  if (file_world_size != world_size) {
    throw InputError(fmt::format("{}: world_size: must be the collection's world size {}, got {}", path, world_size,
                                 file_world_size));
  }
  return workloads;
}

void write_comm_workloads(const std::string& path, int world_size, const std::vector<CommWorkload>& workloads) {
  write_file_atomically(path, comm_workloads_to_json(world_size, workloads).dump() + "\n");
}

void check_given_comm_workloads(const std::vector<CommWorkload>& given, const std::string& source, int world_size,
                                int gpus_per_host, int64_t batch_size) {
  const auto ranks = static_cast<std::size_t>(world_size);
  const int64_t local_batch = batch_size / world_size;
  constexpr double kGiB = 1ull << 30;
  RankBufferFloats held;  // buffers only grow, so a rank ends up holding each one's largest size over the list
  for (std::size_t i = 0; i < given.size(); ++i) {
    if (given[i].dim_sums.size() != ranks || given[i].delays_ms.size() != ranks) {
      throw InputError(fmt::format("{}: workloads[{}]: must list the {} ranks of the world size", source, i, ranks));
    }
    const int64_t host_dim = host_table_row_width(given[i], i, source, ranks, gpus_per_host);
    const RankBufferFloats floats = rank_buffer_floats(given[i], ranks, gpus_per_host, local_batch, host_dim);
    held.grow_to(floats);
    if (floats.bytes() > kMaxGivenBufferBytes) {
      throw InputError(
          fmt::format("{}: workloads[{}]: its dim_sums, rw_dim, allreduce_floats and host_rw_dims need {:.1f} GiB of "
                      "buffers per rank at batch {}, over the limit of {:.0f} GiB",
                      source, i, floats.bytes() / kGiB, batch_size, kMaxGivenBufferBytes / kGiB));
    }
  }
  if (held.bytes() > kMaxGivenBufferBytes) {
    throw InputError(
        fmt::format("{}: workloads: together need {:.1f} GiB of buffers per rank at batch {} (each buffer "
                    "keeps its largest size), over the limit of {:.0f} GiB",
                    source, held.bytes() / kGiB, batch_size, kMaxGivenBufferBytes / kGiB));
  }
}

uint64_t comm_workloads_digest(const std::vector<CommWorkload>& workloads) {
  std::string text;
  for (const auto& w : workloads) {
    for (int64_t d : w.dim_sums) text += fmt::format("{},", d);
    for (double d : w.delays_ms) text += fmt::format("{:.17g},", d);
    // Only when present, so the digests of workloads without them (directories being resumed) stay.
    if (w.rw_dim > 0 || w.allreduce_floats > 0) text += fmt::format("rw{},ar{},", w.rw_dim, w.allreduce_floats);
    if (!w.host_rw_dims.empty()) {
      text += "host";
      for (int64_t d : w.host_rw_dims) text += fmt::format("{},", d);
    }
    text += ";";
  }
  return fnv1a_hash(text);
}

}  // namespace shardplan
