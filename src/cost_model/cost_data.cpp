#include "shardplan/cost_model/cost_data.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "shardplan/core/atomic_file.hpp"
#include "shardplan/core/errors.hpp"
#include "shardplan/core/json_fields.hpp"
#include "shardplan/core/json_file.hpp"

namespace shardplan {

double fastest_ms(const std::vector<double>& iterations_ms, double fallback_ms) {
  if (iterations_ms.empty()) return fallback_ms;
  return *std::min_element(iterations_ms.begin(), iterations_ms.end());
}

double undisturbed_latency_ms(const ComputeSample& sample) {
  return fastest_ms(sample.iterations_ms, sample.latency_ms);
}

double typical_latency_ms(const ComputeSample& sample) { return sample.latency_ms; }

namespace fs = std::filesystem;

namespace {

// Samples are fsynced in groups: a crash loses at most this many, never a partial one.
constexpr int64_t kSyncEvery = 16;

nlohmann::json hist_to_json(const ReuseHist& hist) {
  nlohmann::json out = nlohmann::json::array();
  for (double h : hist) out.push_back(std::round(h * 1e6) / 1e6);
  return out;
}

template <typename T>
std::vector<T> read_vector(const nlohmann::json& doc, const char* key, const std::string& source, std::size_t size) {
  const auto& array = read_array(require_member(doc, key, source, ""), source, key);
  if (array.size() != size) throw_field_error(source, key, fmt::format("must have {} entries", size), array);
  std::vector<T> out;
  for (std::size_t i = 0; i < array.size(); ++i) {
    std::string path = fmt::format("{}[{}]", key, i);
    if constexpr (std::is_integral_v<T>) {
      out.push_back(read_int64(array[i], source, path, 0, kMaxDim * 1'000'000ll));
    } else {
      out.push_back(read_double(array[i], source, path, 0.0, 1e9));
    }
  }
  return out;
}

// Cuts a torn last line (an interrupted write) and counts the complete ones.
int64_t repair_and_count(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return 0;
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::size_t keep = content.rfind('\n');
  keep = keep == std::string::npos ? 0 : keep + 1;
  if (keep != content.size()) {
    fs::resize_file(path, keep);
  }
  return static_cast<int64_t>(std::count(content.begin(), content.begin() + static_cast<std::ptrdiff_t>(keep), '\n'));
}

void load_samples_file(const fs::path& dir, CostKind kind, CostData& data) {
  fs::path samples = dir / kCostSamplesFile;
  std::ifstream in(samples);
  if (!in) throw InputError(fmt::format("{}: missing (every cost-data directory has one)", samples.string()));
  std::string line;
  int64_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty()) continue;
    std::string source = fmt::format("{}:{}", samples.string(), number);
    nlohmann::json doc = parse_json_text(line, source);
    if (kind == CostKind::kCompute) {
      data.compute.push_back(compute_sample_from_json(doc, source));
    } else {
      data.comm.push_back(comm_sample_from_json(doc, source));
    }
  }
}

}  // namespace

std::string cost_kind_name(CostKind kind) { return kind == CostKind::kCompute ? "compute" : "comm"; }

nlohmann::json compute_sample_to_json(const ComputeSample& sample) {
  nlohmann::json shards = nlohmann::json::array();
  for (const auto& s : sample.shards) {
    shards.push_back({{"rows", s.rows},
                      {"dim", s.dim},
                      {"pooling_factor", std::round(s.pooling_factor * 1e4) / 1e4},
                      {"reuse_hist", hist_to_json(s.reuse_hist)}});
  }
  nlohmann::json iterations = nlohmann::json::array();
  for (double ms : sample.iterations_ms) iterations.push_back(std::round(ms * 1e4) / 1e4);
  return {{"shards", shards}, {"latency_ms", std::round(sample.latency_ms * 1e4) / 1e4}, {"iterations_ms", iterations}};
}

nlohmann::json comm_sample_to_json(const CommSample& sample) {
  auto rounded = [](const std::vector<double>& values) {
    nlohmann::json out = nlohmann::json::array();
    for (double v : values) out.push_back(std::round(v * 1e4) / 1e4);
    return out;
  };
  nlohmann::json doc = {{"world_size", sample.world_size},
                        {"dim_sums", sample.dim_sums},
                        {"delays_ms", rounded(sample.delays_ms)},
                        {"fw_ms", rounded(sample.fw_ms)},
                        {"bw_ms", rounded(sample.bw_ms)}};
  if (sample.devices_per_host > 0) doc["gpus_per_host"] = sample.devices_per_host;
  if (sample.rw_dim > 0) doc["rw_dim"] = sample.rw_dim;
  if (sample.allreduce_floats > 0) {
    doc["allreduce_floats"] = sample.allreduce_floats;
    doc["allreduce_ms"] = rounded(sample.allreduce_ms);
  }
  if (!sample.host_rw_dims.empty()) doc["host_rw_dims"] = sample.host_rw_dims;
  return doc;
}

std::vector<int64_t> model_dim_sums(const CommSample& sample) {
  std::vector<int64_t> widths = sample.dim_sums;
  for (int64_t& w : widths) w += sample.rw_dim;
  for (std::size_t r = 0; r < sample.host_rw_dims.size() && r < widths.size(); ++r) widths[r] += sample.host_rw_dims[r];
  return widths;
}

ComputeSample compute_sample_from_json(const nlohmann::json& doc, const std::string& source) {
  read_object(doc, source, "(sample)");
  ComputeSample sample;
  const auto& shards = read_array(require_member(doc, "shards", source, ""), source, "shards");
  if (shards.empty()) throw_field_error(source, "shards", "must not be empty", shards);
  for (std::size_t i = 0; i < shards.size(); ++i) {
    std::string path = fmt::format("shards[{}]", i);
    const auto& s = read_object(shards[i], source, path);
    ShardFeatures f;
    f.rows = read_int64(require_member(s, "rows", source, path), source, path + ".rows", 1, kMaxRows);
    f.dim = static_cast<int>(read_int64(require_member(s, "dim", source, path), source, path + ".dim", 1, kMaxDim));
    f.pooling_factor = read_double(require_member(s, "pooling_factor", source, path), source, path + ".pooling_factor",
                                   0.0, kMaxPoolingFactor);
    const auto& hist = require_member(s, "reuse_hist", source, path);
    if (!hist.is_array() || hist.size() != kReuseBins) {
      throw_field_error(source, path + ".reuse_hist", "must be an array of 17 numbers", hist);
    }
    for (int b = 0; b < kReuseBins; ++b) {
      f.reuse_hist[static_cast<std::size_t>(b)] =
          read_double(hist[static_cast<std::size_t>(b)], source, fmt::format("{}.reuse_hist[{}]", path, b), 0.0, 1.0);
    }
    sample.shards.push_back(f);
  }
  sample.latency_ms = read_double(require_member(doc, "latency_ms", source, ""), source, "latency_ms", 0.0, 1e9);
  if (const auto* iterations = find_member(doc, "iterations_ms")) {
    sample.iterations_ms = read_vector<double>(doc, "iterations_ms", source, iterations->size());
  }
  return sample;
}

CommSample comm_sample_from_json(const nlohmann::json& doc, const std::string& source) {
  read_object(doc, source, "(sample)");
  CommSample sample;
  sample.world_size =
      static_cast<int>(read_int64(require_member(doc, "world_size", source, ""), source, "world_size", 2, 65536));
  auto n = static_cast<std::size_t>(sample.world_size);
  sample.dim_sums = read_vector<int64_t>(doc, "dim_sums", source, n);
  sample.delays_ms = read_vector<double>(doc, "delays_ms", source, n);
  sample.fw_ms = read_vector<double>(doc, "fw_ms", source, n);
  sample.bw_ms = read_vector<double>(doc, "bw_ms", source, n);
  if (const auto* per_host = find_member(doc, "gpus_per_host")) {
    sample.devices_per_host = static_cast<int>(read_int64(*per_host, source, "gpus_per_host", 1, sample.world_size));
  }
  if (const auto* rw = find_member(doc, "rw_dim")) sample.rw_dim = read_int64(*rw, source, "rw_dim", 0, 1 << 20);
  if (const auto* floats = find_member(doc, "allreduce_floats")) {
    sample.allreduce_floats = read_int64(*floats, source, "allreduce_floats", 0, int64_t{1} << 40);
    if (sample.allreduce_floats > 0) sample.allreduce_ms = read_vector<double>(doc, "allreduce_ms", source, n);
  }
  if (find_member(doc, "host_rw_dims") != nullptr)
    sample.host_rw_dims = read_vector<int64_t>(doc, "host_rw_dims", source, n);
  return sample;
}

CostDataWriter::CostDataWriter(const std::string& dir, const nlohmann::json& meta) {
  fs::path root(dir);
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec) throw RuntimeFailure(fmt::format("{}: cannot create directory: {}", dir, ec.message()));
  fs::path meta_path = root / kCostMetaFile;
  path_ = (root / kCostSamplesFile).string();
  if (fs::exists(meta_path)) {
    nlohmann::json old = read_json_file(meta_path.string());
    if (old.value("format", "") != kCostDataFormat || old.value("kind", nlohmann::json()) != meta.at("kind") ||
        old.value("config", nlohmann::json()) != meta.at("config")) {
      throw SettingError("cost-data directory",
                         fmt::format("{}: describes a different collection (kind or settings differ); use a new "
                                     "directory. Existing config: {}",
                                     meta_path.string(), old.value("config", nlohmann::json()).dump()));
    }
  } else {
    nlohmann::json full = meta;
    full["format"] = kCostDataFormat;
    write_file_atomically(meta_path.string(), full.dump(2) + "\n");
  }
  existing_ = repair_and_count(path_);
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) throw RuntimeFailure(fmt::format("{}: cannot open for appending: {}", path_, std::strerror(errno)));
}

CostDataWriter::~CostDataWriter() {
  if (fd_ >= 0) {
    ::fsync(fd_);
    ::close(fd_);
  }
}

void CostDataWriter::append(const nlohmann::json& sample) {
  std::string line = sample.dump() + "\n";
  // One write of a whole line: an interrupt leaves either the line or a torn tail that resume cuts.
  ssize_t written = ::write(fd_, line.data(), line.size());
  if (written != static_cast<ssize_t>(line.size())) {
    throw RuntimeFailure(fmt::format("{}: write failed: {}", path_, std::strerror(errno)));
  }
  if (++unsynced_ >= kSyncEvery) {
    ::fsync(fd_);
    unsynced_ = 0;
  }
}

std::optional<CostData> find_cost_data(const std::string& dir, CostKind kind) {
  CostData data;
  std::vector<fs::path> dirs;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw InputError(fmt::format("{}: not a directory", dir));
  if (fs::exists(fs::path(dir) / kCostMetaFile)) {
    dirs.push_back(dir);
  } else {
    for (const auto& entry : fs::recursive_directory_iterator(dir)) {
      if (entry.is_regular_file() && entry.path().filename() == kCostMetaFile)
        dirs.push_back(entry.path().parent_path());
    }
    std::sort(dirs.begin(), dirs.end());
  }
  nlohmann::json metas = nlohmann::json::array();
  for (const auto& d : dirs) {
    std::string meta_path = (d / kCostMetaFile).string();
    nlohmann::json meta = read_json_file(meta_path);
    if (!meta.is_object() || meta.value("format", "") != kCostDataFormat) {
      // Below a root, other meta.json files (a model directory, say) are not cost data: skip them.
      if (dirs.size() > 1 || d != fs::path(dir)) continue;
      throw InputError(fmt::format("{}: format: expected \"{}\"", meta_path, kCostDataFormat));
    }
    if (meta.value("kind", "") != cost_kind_name(kind)) continue;
    metas.push_back(meta);
    load_samples_file(d, kind, data);
  }
  if (metas.empty()) return std::nullopt;
  data.meta = metas.size() == 1 ? metas[0] : nlohmann::json{{"sources", metas}};
  return data;
}

CostData load_cost_data(const std::string& dir, CostKind kind) {
  std::optional<CostData> data = find_cost_data(dir, kind);
  if (!data) {
    throw InputError(fmt::format("{}: no {} cost data (no meta.json with \"kind\": \"{}\" here or below)", dir,
                                 cost_kind_name(kind), cost_kind_name(kind)));
  }
  return std::move(*data);
}

}  // namespace shardplan
