#pragma once
// Where a run's outputs go, worked out and checked before the run does any work, so that no run loses a
// user's file: an output that is one of the run's inputs, or another of its outputs (symlinks
// resolved), is refused, and so is one whose directory is missing or not writable. Labels name the
// paths as the user gave them (the CLI passes its flags); the messages quote them.
#include <filesystem>
#include <string>
#include <vector>

namespace shardplan {

struct LabelledPath {
  std::string label;  // "-o", "--tables": how the user named it
  std::string path;
};

// How an output is written (atomic_file.hpp).
struct OutputTarget {
  enum class Kind {
    kStandardOutput,  // "-", or a path that names this process's standard output
    kReplace,         // a regular file (or none yet): written beside it and renamed over it
    kWriteInto,       // an existing device, FIFO or socket: written into, never replaced
  };
  Kind kind = Kind::kReplace;
  // kReplace: the file itself, symlinks resolved (it need not exist); kWriteInto: the path as given.
  std::filesystem::path file;
};

// Throws InputError (bad usage) naming `label` when the path is empty, and RuntimeFailure (the output
// cannot be written, as when a write fails) naming `label` and `path` when it is a directory, lies in a
// directory that does not exist or cannot be written, or is a chain of more than 40 symlinks.
OutputTarget resolve_output(const std::string& path, const std::string& label = "");

// resolve_output for each output, then: no output may be the same file as an input or as another
// output (InputError). Inputs that do not exist are skipped (reading them fails later, with its own
// message).
void check_output_files(const std::vector<LabelledPath>& outputs, const std::vector<LabelledPath>& inputs);

// For outputs that are directories a command creates or resumes (a model, cost data): each must be a
// writable directory, or be creatable under one, and none may be one of the inputs.
void check_output_directories(const std::vector<LabelledPath>& outputs, const std::vector<LabelledPath>& inputs);

}  // namespace shardplan
