#include "shardplan/costs/tbe_timer.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>

#include "shardplan/core/atomic_file.hpp"
#include "shardplan/core/errors.hpp"
#include "shardplan/core/median.hpp"
#include "shardplan/core/subprocess.hpp"
#include "shardplan/dataset/trace.hpp"
#include "shardplan/dataset/trace_file.hpp"

namespace shardplan {

namespace {

constexpr double kStartSeconds = 300;        // importing torch and FBGEMM on a cold, loaded machine
constexpr double kSetSeconds = 600;          // one set's build and timed steps
constexpr uint64_t kShardSeedStride = 7919;  // measure_compute_step's per-shard trace seeds

// One worker for the process, started on first use and restarted when asked for another program.
class TbeWorker {
 public:
  nlohmann::json ask(const ExternalProgram& program, const nlohmann::json& request) {
    std::lock_guard<std::mutex> lock(mutex_);
    start(program);
    std::string line;
    try {
      line = process_->ask(request.dump(), kSetSeconds);
    } catch (const RuntimeFailure&) {
      // A worker that timed out may still answer later: never ask it again, or its late answer would be
      // taken for the next set's.
      process_.reset();
      throw;
    }
    nlohmann::json answer = nlohmann::json::parse(line, nullptr, false);
    if (answer.is_discarded() || !answer.is_object()) throw RuntimeFailure("the fbgemm-tbe worker answered nonsense");
    if (answer.contains("error")) {
      throw RuntimeFailure(fmt::format("the fbgemm-tbe worker failed: {}", answer["error"].get<std::string>()));
    }
    return answer;
  }

  std::string versions(const ExternalProgram& program) {
    std::lock_guard<std::mutex> lock(mutex_);
    start(program);
    std::string out;
    for (const auto& [name, version] : versions_.items()) {
      out += fmt::format("{}{} {}", out.empty() ? "" : ", ", name, version.get<std::string>());
    }
    return out;
  }

  const std::string& scratch() const { return scratch_.path(); }

 private:
  void start(const ExternalProgram& program) {
    if (process_ && program.command == command_ && program.environment == environment_) return;
    if (program.command.empty()) throw RuntimeFailure("the fbgemm-tbe kernel: no worker program was given");
    process_.reset();
    process_ = std::make_unique<LineProcess>(program.command, program.environment);
    command_ = program.command;
    environment_ = program.environment;
    nlohmann::json ready = nlohmann::json::parse(process_->read_line(kStartSeconds), nullptr, false);
    if (ready.is_discarded() || !ready.value("ready", false))
      throw RuntimeFailure("the fbgemm-tbe worker did not start");
    versions_ = ready.value("versions", nlohmann::json::object());
    spdlog::debug("fbgemm-tbe worker ready: {}", versions_.dump());
  }

  std::mutex mutex_;
  std::unique_ptr<LineProcess> process_;
  std::vector<std::string> command_;
  std::vector<std::string> environment_;
  nlohmann::json versions_;
  TemporaryDirectory scratch_{"shard-plan-tbe"};
};

TbeWorker& worker() {
  static TbeWorker instance;
  return instance;
}

}  // namespace

ComputeTiming measure_with_tbe(const std::vector<Table>& shards, const ComputeBenchConfig& config, uint64_t seed) {
  if (shards.empty()) throw InputError("measure_with_tbe: no shards");
  std::vector<IndexTrace> traces;
  for (std::size_t k = 0; k < shards.size(); ++k) {
    traces.push_back(synthesize_trace(shards[k], config.batch_size, seed + k * kShardSeedStride));
  }
  const std::string path = worker().scratch() + "/set.traces";
  write_file_atomically(path, format_trace_file(shards, traces, config.batch_size, seed));
  nlohmann::json answer =
      worker().ask(config.tbe_worker,
                   {{"traces", path},
                    {"optimizer", "sgd"},
                    {"device", config.device == "cuda" ? fmt::format("cuda:{}", config.device_index) : config.device},
                    {"warmup", config.warmup_iterations},
                    {"iterations", config.timed_iterations},
                    {"threads", config.threads}});
  ComputeTiming timing;
  for (const auto& ms : answer.at("samples_ms")) {
    const double value = ms.get<double>();
    if (!(value >= 0.0)) throw RuntimeFailure(fmt::format("the fbgemm-tbe worker timed a step at {} ms", value));
    timing.iterations_ms.push_back(value);
  }
  if (timing.iterations_ms.empty()) throw RuntimeFailure("the fbgemm-tbe worker timed no step");
  timing.median_ms = median(timing.iterations_ms);
  return timing;
}

std::string tbe_versions(const ComputeBenchConfig& config) { return worker().versions(config.tbe_worker); }

}  // namespace shardplan
