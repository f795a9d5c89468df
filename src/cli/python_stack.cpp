#include "python_stack.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "shardplan/core/bundled_path.hpp"
#include "shardplan/core/errors.hpp"
#include "shardplan/core/subprocess.hpp"
#include "shardplan/planners/planner.hpp"

namespace shardplan::cli {

namespace {

std::string python_interpreter() {
  if (const char* chosen = std::getenv("SHARDPLAN_PYTHON"); chosen != nullptr && *chosen != '\0') return chosen;
  if (std::string venv = find_bundled_path(".venv/bin/python"); !venv.empty()) return venv;
  return "python3";
}

// PYTHONPATH with the bundled package first, so the binary runs the package of its own version.
std::vector<std::string> package_environment() {
  const std::string init = find_bundled_path("python/shardplan/__init__.py");
  if (init.empty()) return {};
  std::string path = std::filesystem::path(init).parent_path().parent_path().string();
  if (const char* old = std::getenv("PYTHONPATH"); old != nullptr && *old != '\0') path += std::string(":") + old;
  return {"PYTHONPATH=" + path};
}

std::string last_line(const std::string& text) {
  std::string trimmed = text.substr(0, text.find_last_not_of("\n ") + 1);
  return trimmed.substr(trimmed.find_last_of('\n') + 1);
}

}  // namespace

namespace {

ExternalProgram python_module_program(const std::string& module, const std::string& imports, const std::string& who,
                                      const std::string& needs) {
  ExternalProgram program{{python_interpreter(), "-m", module}, package_environment()};
  spdlog::info("{}: checking that {} imports {}", who, program.command.front(), needs);
  ProcessResult check;
  try {
    check = run_process({program.command.front(), "-c", "import " + imports}, program.environment);
  } catch (const RuntimeFailure& e) {
    check.exit_code = 127;
    check.errors = e.what();
  }
  if (check.exit_code != 0) {
    throw InputError(fmt::format(
        "{}: needs {}, and {} cannot import it ({}). Install TorchRec 1.9 and its fbgemm-gpu into that Python's "
        "environment beside the shardplan package (docs/torchrec.md), or, in a checkout, the pinned stack with "
        "./scripts/setup-python.sh (.venv, found beside this build); or set SHARDPLAN_PYTHON to a Python that has "
        "torch, fbgemm-gpu, torchrec and the shardplan package",
        who, needs, program.command.front(), last_line(check.errors)));
  }
  return program;
}

}  // namespace

ExternalProgram torchrec_program_for(std::vector<std::string> planners, const std::vector<std::string>& rivals) {
  planners.insert(planners.end(), rivals.begin(), rivals.end());
  const auto& external = external_planner_names();
  const auto needed = std::find_first_of(planners.begin(), planners.end(), external.begin(), external.end());
  if (needed == planners.end()) return {};
  return python_module_program("shardplan.torchrec.baseline", "torchrec, shardplan.torchrec.baseline",
                               "planner " + *needed, "TorchRec's own planner");
}

ExternalProgram tbe_worker_program() {
  return python_module_program("shardplan.measure.tbe_worker", "fbgemm_gpu, shardplan.measure.tbe",
                               "--kernel fbgemm-tbe", "FBGEMM's table-batched embedding");
}

}  // namespace shardplan::cli
