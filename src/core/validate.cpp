#include "shardplan/core/validate.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <tuple>
#include <unordered_map>

#include "shardplan/core/cluster.hpp"
#include "shardplan/core/errors.hpp"
#include "shardplan/core/json_fields.hpp"
#include "shardplan/core/plan_reader.hpp"
#include "shardplan/core/sharding_types.hpp"
#include "shardplan/core/units.hpp"
#include "shardplan/core/uvm_cache.hpp"

namespace shardplan {

namespace {

// Hostile plans can list huge overlapping shards; sums saturate instead of overflowing.
int64_t saturating_add(int64_t a, int64_t b) {
  int64_t sum = 0;
  return __builtin_add_overflow(a, b, &sum) ? INT64_MAX : sum;
}

struct Rect {
  int rank;
  int64_t row0, col0, rows, cols;
};

std::pair<int64_t, int64_t> read_pair(const nlohmann::json& value, std::string_view source, const std::string& path,
                                      int64_t max_first, int64_t max_second, int64_t min) {
  if (!value.is_array() || value.size() != 2) throw_field_error(source, path, "must be an array [rows, cols]", value);
  return {read_int64(value[0], source, path + "[0]", min, max_first),
          read_int64(value[1], source, path + "[1]", min, max_second)};
}

class Validator {
 public:
  Validator(const nlohmann::json& plan, const std::vector<Table>& tables, std::string_view source)
      : plan_(plan), tables_(tables), source_(source), cluster_(plan_cluster_from_json(plan, source)) {
    memory_.assign(static_cast<std::size_t>(cluster_.num_devices), 0);
    ddr_.assign(static_cast<std::size_t>(cluster_.num_devices), 0);
    for (std::size_t i = 0; i < tables_.size(); ++i) by_name_.emplace(tables_[i].name, i);
    covered_.assign(tables_.size(), false);
  }

  ValidationResult run() {
    const auto& list = read_array(require_member(plan_, "tables", source_, ""), source_, "tables");
    for (std::size_t i = 0; i < list.size(); ++i) check_table(list[i], fmt::format("tables[{}]", i));
    for (std::size_t i = 0; i < tables_.size(); ++i) {
      if (!covered_[i]) problem("table \"{}\" is not in the plan", tables_[i].name);
    }
    check_memory();
    check_host_memory();
    check_reported_devices();
    check_reported_summary();
    return std::move(result_);
  }

 private:
  template <typename... Args>
  void problem(fmt::format_string<Args...> format, Args&&... args) {
    result_.problems.push_back(fmt::format(format, std::forward<Args>(args)...));
  }

  void check_table(const nlohmann::json& entry, const std::string& path) {
    read_object(entry, source_, path);
    std::string name = read_string(require_member(entry, "name", source_, path), source_, path + ".name");
    int64_t rows = read_int64(require_member(entry, "rows", source_, path), source_, path + ".rows", 1, kMaxRows);
    int64_t dim = read_int64(require_member(entry, "dim", source_, path), source_, path + ".dim", 1, kMaxDim);
    const std::string dtype = read_string(require_member(entry, "dtype", source_, path), source_, path + ".dtype");
    std::string type =
        read_string(require_member(entry, "sharding_type", source_, path), source_, path + ".sharding_type");
    const auto& ranks = read_array(require_member(entry, "ranks", source_, path), source_, path + ".ranks");
    const auto& shards = read_array(require_member(entry, "shards", source_, path), source_, path + ".shards");
    if (shards.size() > kMaxShardsPerTable) {
      throw InputError(fmt::format("{}: {}.shards: {} shards, over the limit of {}", source_, path, shards.size(),
                                   kMaxShardsPerTable));
    }

    auto found = by_name_.find(name);
    const Table* table = nullptr;
    if (found == by_name_.end()) {
      problem("{}: table \"{}\" is not in the tables file", path, name);
    } else if (covered_[found->second]) {
      problem("{}: table \"{}\" appears more than once", path, name);
    } else {
      covered_[found->second] = true;
      table = &tables_[found->second];
      if (table->rows != rows || table->dim != dim) {
        problem("{}: table \"{}\" is {} x {} in the plan but {} x {} in the tables file", path, name, rows, dim,
                table->rows, table->dim);
      }
    }
    check_dtype(dtype, table, path);

    std::vector<Rect> rects;
    for (std::size_t s = 0; s < shards.size(); ++s) {
      rects.push_back(read_shard(shards[s], fmt::format("{}.shards[{}]", path, s)));
    }
    check_ranks_list(ranks, rects, path);
    check_geometry(rects, type, rows, dim, path, name);
    if (table != nullptr) check_constraints(*table, type, rects, path);
    const std::optional<double> load_factor = check_kernel(entry, type, path);
    // Its memory is still counted as the plan states it, so its devices' figures raise no second problem.
    if (load_factor) check_load_factor(*load_factor, rects, path);
    if (table != nullptr) {
      for (const auto& r : rects) {
        if (r.rank >= 0 && r.rank < cluster_.num_devices) {
          auto& used = memory_[static_cast<std::size_t>(r.rank)];
          if (load_factor) {
            const PieceMemory cached =
                cached_piece_memory(r.rows, r.cols, table->dtype, cluster_.optimizer, *load_factor);
            used = saturating_add(used, cached.hbm);
            auto& ddr = ddr_[static_cast<std::size_t>(r.rank)];
            ddr = saturating_add(ddr, cached.ddr);
            continue;
          }
          used = saturating_add(used, shard_memory_bytes(r.rows, r.cols, table->dtype, cluster_.optimizer));
          // A replica keeps its dense gradient too (replica_memory_bytes in plan.hpp).
          if (type == "data_parallel") used = saturating_add(used, r.rows * r.cols * dtype_bytes(table->dtype));
        }
      }
    }
  }

  // A cached table's load factor, for every piece of it (the smallest piece first fails); one message.
  void check_load_factor(double load_factor, const std::vector<Rect>& rects, const std::string& path) {
    int64_t fewest = std::numeric_limits<int64_t>::max();
    for (const auto& r : rects) fewest = std::min(fewest, r.rows);
    const std::string why = load_factor_problem(load_factor, rects.empty() ? 0 : fewest);
    if (!why.empty()) problem("{}.cache_params.load_factor: {}", path, why);
  }

  // The compute kernel TorchRec will run: a known one, and a cached table's cache a valid one (TorchRec
  // 1.7+ refuses a load factor outside (0, 1)). Returns the load factor of a cached table.
  std::optional<double> check_kernel(const nlohmann::json& entry, const std::string& type, const std::string& path) {
    const auto* kernel = find_member(entry, "compute_kernel");
    if (kernel == nullptr) return std::nullopt;
    const std::string name = read_string(*kernel, source_, path + ".compute_kernel");
    const auto* params = find_member(entry, "cache_params");
    if (name == "fused" || name == "dense") {
      if (params != nullptr) problem("{}.cache_params: only a fused_uvm_caching table has a cache", path);
      return std::nullopt;
    }
    if (name != "fused_uvm_caching") {
      problem("{}.compute_kernel: unknown \"{}\" (expected fused, dense or fused_uvm_caching)", path, name);
      return std::nullopt;
    }
    if (type == "data_parallel") {
      problem("{}.compute_kernel: a data_parallel table cannot be fused_uvm_caching (TorchRec trains replicas dense)",
              path);
    }
    if (params == nullptr) {
      problem("{}.cache_params: a fused_uvm_caching table needs one (its load factor)", path);
      return std::nullopt;
    }
    read_object(*params, source_, path + ".cache_params");
    if (const auto* algorithm = find_member(*params, "algorithm");
        algorithm != nullptr && read_string(*algorithm, source_, path + ".cache_params.algorithm") != "LRU") {
      problem("{}.cache_params.algorithm: \"{}\" is not planned (shard-plan plans FBGEMM's LRU cache)", path,
              algorithm->get<std::string>());
    }
    // Any number here; its rule (load_factor_problem) is checked against each cached piece's rows.
    const double load_factor = read_double(require_member(*params, "load_factor", source_, path + ".cache_params"),
                                           source_, path + ".cache_params.load_factor",
                                           std::numeric_limits<double>::lowest(), std::numeric_limits<double>::max());
    any_cached_ = true;
    return load_factor;
  }

  // The tables file's per-table sharding_types and ranks.
  void check_constraints(const Table& table, const std::string& type, const std::vector<Rect>& rects,
                         const std::string& path) {
    const TableConstraints& c = table.constraints;
    const auto parsed = parse_sharding_type(type);
    if (parsed && !c.sharding_types.empty() && !c.sharding_types.allows(*parsed)) {
      problem("{}.sharding_type: table \"{}\" is {}, but the tables file allows it only {}", path, table.name, type,
              sharding_types_string(c.sharding_types));
    }
    for (std::size_t i = 0; i < rects.size(); ++i) {
      if (!c.allows_rank(rects[i].rank)) {
        problem("{}.shards[{}].rank: {} is not among table \"{}\"'s ranks [{}] in the tables file", path, i,
                rects[i].rank, table.name, fmt::join(c.ranks, ", "));
      }
    }
  }

  // The plan's element type must be one shard-plan knows and the tables file's: memory is counted in it.
  void check_dtype(const std::string& dtype, const Table* table, const std::string& path) {
    const std::optional<DType> parsed = parse_dtype(dtype);
    if (!parsed) {
      problem("{}.dtype: unknown \"{}\" (expected fp32 or fp16)", path, dtype);
    } else if (table != nullptr && *parsed != table->dtype) {
      problem("{}.dtype: table \"{}\" is {} in the plan but {} in the tables file", path, table->name, dtype,
              dtype_name(table->dtype));
    }
  }

  Rect read_shard(const nlohmann::json& shard, const std::string& path) {
    read_object(shard, source_, path);
    Rect r{};
    int64_t rank =
        read_int64(require_member(shard, "rank", source_, path), source_, path + ".rank", INT32_MIN, INT32_MAX);
    r.rank = static_cast<int>(rank);
    std::tie(r.row0, r.col0) = read_pair(require_member(shard, "shard_offsets", source_, path), source_,
                                         path + ".shard_offsets", kMaxRows, kMaxDim, 0);
    std::tie(r.rows, r.cols) = read_pair(require_member(shard, "shard_sizes", source_, path), source_,
                                         path + ".shard_sizes", kMaxRows, kMaxDim, 0);
    if (r.rank < 0 || r.rank >= cluster_.num_devices) {
      problem("{}.rank: {} is out of range [0, {})", path, r.rank, cluster_.num_devices);
    }
    if (r.rows == 0 || r.cols == 0) problem("{}.shard_sizes: empty shard [{}, {}]", path, r.rows, r.cols);
    if (r.cols % 4 != 0) problem("{}.shard_sizes: width {} is not a multiple of 4", path, r.cols);
    std::string expected =
        fmt::format("rank:{}/cuda:{}", r.rank,
                    ((r.rank % cluster_.devices_per_host) + cluster_.devices_per_host) % cluster_.devices_per_host);
    const auto& placement =
        read_string(require_member(shard, "placement", source_, path), source_, path + ".placement");
    if (placement != expected)
      problem("{}.placement: \"{}\" does not match rank {} (expected \"{}\")", path, placement, r.rank, expected);
    return r;
  }

  void check_ranks_list(const nlohmann::json& ranks, const std::vector<Rect>& rects, const std::string& path) {
    bool same = ranks.size() == rects.size();
    for (std::size_t i = 0; same && i < ranks.size(); ++i) {
      auto r = json_as_int64(ranks[i]);
      same = r && *r == rects[i].rank;
    }
    if (!same) problem("{}.ranks: does not list the shards' ranks in order", path);
  }

  void check_geometry(const std::vector<Rect>& rects, const std::string& type, int64_t rows, int64_t dim,
                      const std::string& path, const std::string& name) {
    if (rects.empty()) {
      problem("{}: table \"{}\" has no shards", path, name);
      return;
    }
    if (type == "data_parallel") {
      check_replicas(rects, rows, dim, path);
      return;
    }
    int64_t area = 0;
    bool in_bounds = true;
    for (std::size_t i = 0; i < rects.size(); ++i) {
      const Rect& r = rects[i];
      if (r.row0 + r.rows > rows || r.col0 + r.cols > dim) {
        problem("{}.shards[{}]: [{}, {}) x [{}, {}) lies outside the {} x {} table", path, i, r.row0, r.row0 + r.rows,
                r.col0, r.col0 + r.cols, rows, dim);
        in_bounds = false;
      }
      area = saturating_add(area, r.rows * r.cols);
    }
    // Overlapping shards can cover as many cells as the table, or more: they are named by the overlap.
    const bool overlapping = check_overlaps(rects, path);
    if (in_bounds && !overlapping && area != rows * dim) {
      problem("{}: shards cover {} of the {} x {} cells (gaps)", path, area, rows, dim);
    }

    if (type == "table_wise") {
      if (rects.size() != 1) problem("{}: table_wise needs exactly one shard, got {}", path, rects.size());
    } else if (type == "column_wise") {
      for (std::size_t i = 0; i < rects.size(); ++i) {
        if (rects[i].row0 != 0 || rects[i].rows != rows)
          problem("{}.shards[{}]: a column_wise shard must hold every row", path, i);
      }
    } else if (type == "row_wise" || type == "table_row_wise") {
      for (std::size_t i = 0; i < rects.size(); ++i) {
        if (rects[i].col0 != 0 || rects[i].cols != dim)
          problem("{}.shards[{}]: a {} shard must hold every column", path, i, type);
      }
      if (type == "table_row_wise") check_one_host(rects, path);
    } else {
      problem(
          "{}.sharding_type: unknown \"{}\" (expected table_wise, column_wise, row_wise, table_row_wise or "
          "data_parallel)",
          path, type);
    }
  }

  // Reports an overlapping pair whenever any shards overlap, in O(n log n), so a shard per GPU on
  // thousands of GPUs stays cheap. The sweep goes down the rows keeping the column spans of the shards
  // that cover the current row; they stay disjoint (a shard meeting one is reported and left out), so a
  // new span can only meet the spans on either side of it. A shard that overlaps only shards left out is
  // not named again: the plan is already invalid.
  bool check_overlaps(const std::vector<Rect>& rects, const std::string& path) {
    std::vector<std::size_t> order(rects.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(),
              [&](std::size_t a, std::size_t b) { return std::tie(rects[a].row0, a) < std::tie(rects[b].row0, b); });
    std::map<int64_t, std::size_t> active;                                  // col0 -> shard, disjoint spans
    std::multimap<int64_t, std::map<int64_t, std::size_t>::iterator> ends;  // row end -> its span
    bool any = false;
    auto report = [&](std::size_t a, std::size_t b) {
      problem("{}.shards[{}] overlaps shards[{}]", path, std::max(a, b), std::min(a, b));
      any = true;
    };
    for (std::size_t i : order) {
      const Rect& r = rects[i];
      if (r.rows <= 0 || r.cols <= 0) continue;  // empty shards are reported apart and cover nothing
      while (!ends.empty() && ends.begin()->first <= r.row0) {
        active.erase(ends.begin()->second);
        ends.erase(ends.begin());
      }
      auto next = active.lower_bound(r.col0);
      if (next != active.end() && next->first < r.col0 + r.cols) {
        report(i, next->second);
        continue;
      }
      if (next != active.begin()) {
        const std::size_t before = std::prev(next)->second;
        if (rects[before].col0 + rects[before].cols > r.col0) {
          report(i, before);
          continue;
        }
      }
      ends.emplace(r.row0 + r.rows, active.emplace(r.col0, i).first);
    }
    return any;
  }

  // A data_parallel table: one whole replica on every rank, in rank order.
  void check_replicas(const std::vector<Rect>& rects, int64_t rows, int64_t dim, const std::string& path) {
    if (rects.size() != static_cast<std::size_t>(cluster_.num_devices)) {
      problem("{}: data_parallel needs one replica on each of the {} ranks, got {} shards", path, cluster_.num_devices,
              rects.size());
    }
    for (std::size_t i = 0; i < rects.size(); ++i) {
      const Rect& r = rects[i];
      if (r.row0 != 0 || r.col0 != 0 || r.rows != rows || r.cols != dim) {
        problem("{}.shards[{}]: a data_parallel replica must hold the whole {} x {} table, got [{}, {}) x [{}, {})",
                path, i, rows, dim, r.row0, r.row0 + r.rows, r.col0, r.col0 + r.cols);
      }
      if (r.rank != static_cast<int>(i))
        problem("{}.shards[{}]: replicas go in rank order, expected rank {}, got {}", path, i, i, r.rank);
    }
  }

  // table_row_wise blocks stay within one host, where the reduce-scatter runs over the host's links.
  void check_one_host(const std::vector<Rect>& rects, const std::string& path) {
    const int per_host = cluster_.devices_per_host;
    const int host = rects.front().rank / per_host;
    for (std::size_t i = 1; i < rects.size(); ++i) {
      if (rects[i].rank / per_host != host) {
        problem(
            "{}.shards[{}]: rank {} is on host {}, but table_row_wise keeps a table's blocks on one host (shards[0] "
            "is on host {})",
            path, i, rects[i].rank, rects[i].rank / per_host, host);
      }
    }
  }

  void check_memory() {
    int64_t usable = cluster_.usable_bytes_per_device();
    for (std::size_t r = 0; r < memory_.size(); ++r) {
      if (memory_[r] > usable) {
        problem("device {}: shards need {} ({} bytes), over its usable {} ({} bytes)", r, format_bytes(memory_[r]),
                memory_[r], format_bytes(usable), usable);
      }
    }
  }

  // Cached tables keep their weights in their hosts' DDR, which the host's devices share.
  void check_host_memory() {
    if (!any_cached_) return;
    if (!cluster_.offers_host_memory()) {
      problem("ddr_per_host_bytes: the plan keeps tables in host memory (fused_uvm_caching) but offers none");
      return;
    }
    const auto per_host = static_cast<std::size_t>(cluster_.devices_per_host);
    std::vector<int64_t> hosts((ddr_.size() + per_host - 1) / per_host, 0);
    for (std::size_t r = 0; r < ddr_.size(); ++r) hosts[r / per_host] = saturating_add(hosts[r / per_host], ddr_[r]);
    max_host_ddr_ = hosts.empty() ? 0 : *std::max_element(hosts.begin(), hosts.end());
    for (std::size_t h = 0; h < hosts.size(); ++h) {
      if (hosts[h] > cluster_.ddr_per_host_bytes) {
        problem("host {}: its devices' cached tables need {} of host memory, over its {}", h, format_bytes(hosts[h]),
                format_bytes(cluster_.ddr_per_host_bytes));
      }
    }
  }

  // The plan's summary of its memory must agree with its shards, as its devices' must.
  void check_reported_summary() {
    const auto* summary = find_member(plan_, "summary");
    if (summary == nullptr || !summary->is_object()) return;
    if (const auto* stated = find_member(*summary, "max_memory_bytes")) {
      const int64_t needed = memory_.empty() ? 0 : *std::max_element(memory_.begin(), memory_.end());
      if (json_as_int64(*stated) != needed) {
        problem("summary.max_memory_bytes: says {}, the busiest device's shards need {}", stated->dump(), needed);
      }
    }
    if (const auto* stated = find_member(*summary, "max_host_ddr_bytes")) {
      if (json_as_int64(*stated) != max_host_ddr_) {
        problem("summary.max_host_ddr_bytes: says {}, the fullest host's cached shards need {}", stated->dump(),
                max_host_ddr_);
      }
    }
  }

  // A plan's own "devices" summary must agree with its shards.
  void check_reported_devices() {
    const auto& devices = read_array(require_member(plan_, "devices", source_, ""), source_, "devices");
    if (devices.size() != memory_.size()) {
      problem("devices: lists {} devices, the plan has {}", devices.size(), memory_.size());
      return;
    }
    for (std::size_t r = 0; r < memory_.size(); ++r) {
      const std::string path = fmt::format("devices[{}]", r);
      read_object(devices[r], source_, path);
      const auto& mem = require_member(devices[r], "memory_bytes", source_, path);
      auto value = json_as_int64(mem);
      if (!value || *value != memory_[r]) {
        problem("devices[{}].memory_bytes: says {}, its shards need {}", r, mem.dump(), memory_[r]);
      }
      if (const auto* ddr = find_member(devices[r], "ddr_bytes")) {
        const auto stated = json_as_int64(*ddr);
        if (!stated || *stated != ddr_[r]) {
          problem("devices[{}].ddr_bytes: says {}, its cached shards need {}", r, ddr->dump(), ddr_[r]);
        }
      }
    }
  }

  const nlohmann::json& plan_;
  const std::vector<Table>& tables_;
  std::string_view source_;
  Cluster cluster_;
  std::unordered_map<std::string, std::size_t> by_name_;
  std::vector<bool> covered_;
  std::vector<int64_t> memory_;
  std::vector<int64_t> ddr_;  // per device: its cached shards' host memory
  int64_t max_host_ddr_ = 0;  // the fullest host's cached shards' DDR (check_host_memory)
  bool any_cached_ = false;
  ValidationResult result_;
};

}  // namespace

ValidationResult validate_plan_json(const nlohmann::json& plan, const std::vector<Table>& tables,
                                    std::string_view source) {
  return Validator(plan, tables, source).run();
}

}  // namespace shardplan
