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
  // The setting the error is about, in the library's terms ("beam width"), and what is wrong with it: set
  // by SettingError, SettingFailure and InfeasibleSetting, empty otherwise. what() is then
  // "<setting>: <rule>"; the CLI names the flag that sets it instead (main.cpp, flag_of_setting).
  const std::string& setting() const { return setting_; }
  const std::string& rule() const { return rule_; }

 protected:
  Error(ExitCode code, const std::string& setting, const std::string& rule)
      : std::runtime_error(setting + ": " + rule), code_(code), setting_(setting), rule_(rule) {}

 private:
  ExitCode code_;
  std::string setting_;
  std::string rule_;
};

// Bad input or usage: the message names the file, the field and the value.
class InputError : public Error {
 public:
  explicit InputError(const std::string& message) : Error(ExitCode::kBadInput, message) {}

 protected:
  InputError(const std::string& setting, const std::string& rule) : Error(ExitCode::kBadInput, setting, rule) {}
};

// A setting of a planner or a cluster out of its range, named in the library's terms ("beam width"); the
// CLI names the flag that sets it instead. what() is "<setting>: <rule>".
class SettingError : public InputError {
 public:
  SettingError(const std::string& setting, const std::string& rule) : InputError(setting, rule) {}
};

// The tables cannot be placed in the cluster's memory.
class InfeasibleError : public Error {
 public:
  explicit InfeasibleError(const std::string& message) : Error(ExitCode::kInfeasible, message) {}

 protected:
  InfeasibleError(const std::string& setting, const std::string& rule) : Error(ExitCode::kInfeasible, setting, rule) {}
};

// Nothing can be drawn or placed as a setting asks ("fewest tables per task"), named like SettingError's.
class InfeasibleSetting : public InfeasibleError {
 public:
  InfeasibleSetting(const std::string& setting, const std::string& rule) : InfeasibleError(setting, rule) {}
};

class RuntimeFailure : public Error {
 public:
  explicit RuntimeFailure(const std::string& message) : Error(ExitCode::kRuntimeFailure, message) {}

 protected:
  RuntimeFailure(const std::string& setting, const std::string& rule)
      : Error(ExitCode::kRuntimeFailure, setting, rule) {}
};

// A failure at run time that another value of a setting mends (the temporary directory's disk is full),
// named like SettingError's.
class SettingFailure : public RuntimeFailure {
 public:
  SettingFailure(const std::string& setting, const std::string& rule) : RuntimeFailure(setting, rule) {}
};

// Work given a deadline (a baseline compared under a time limit) that passed before it had an answer.
class DeadlinePassed : public RuntimeFailure {
 public:
  using RuntimeFailure::RuntimeFailure;
};

}  // namespace shardplan
