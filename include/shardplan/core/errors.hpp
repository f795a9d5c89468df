#pragma once
// Typed errors: each carries the process exit code the CLI maps it to.
#include <stdexcept>
#include <string>

namespace shardplan {

enum class ExitCode : int {
  kOk = 0,
  kRuntimeFailure = 1,
  kBadInput = 2,  // bad usage or bad input
  kInfeasible = 3,
};

class Error : public std::runtime_error {
 public:
  Error(ExitCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ExitCode code() const { return code_; }

 private:
  ExitCode code_;
};

// Bad input or usage: the message names the file, the field and the value.
class InputError : public Error {
 public:
  explicit InputError(const std::string& message) : Error(ExitCode::kBadInput, message) {}
};

// A setting of a planner or a cluster out of its range, named in the library's terms ("beam width"); the
// CLI names the flag that sets it instead. what() is "<setting>: <rule>".
class SettingError : public InputError {
 public:
  SettingError(const std::string& setting, const std::string& rule)
      : InputError(setting + ": " + rule), setting_(setting), rule_(rule) {}
  const std::string& setting() const { return setting_; }
  const std::string& rule() const { return rule_; }

 private:
  std::string setting_;
  std::string rule_;
};

// The tables cannot be placed in the cluster's memory.
class InfeasibleError : public Error {
 public:
  explicit InfeasibleError(const std::string& message) : Error(ExitCode::kInfeasible, message) {}
};

class RuntimeFailure : public Error {
 public:
  explicit RuntimeFailure(const std::string& message) : Error(ExitCode::kRuntimeFailure, message) {}
};

// Work given a deadline (a baseline compared under a time limit) that passed before it had an answer.
class DeadlinePassed : public RuntimeFailure {
 public:
  using RuntimeFailure::RuntimeFailure;
};

}  // namespace shardplan
