#pragma once
// Output files are never half-written, and a run's outputs appear together or not at all: each is
// staged in full (a regular file's content in a temporary file beside it, flushed to disk) before any is
// committed. A device or FIFO is written into, never replaced; a symlink's target is replaced in its own
// directory, the link left as it is; "-" (or a path naming standard output) is standard output.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "shardplan/core/output_paths.hpp"
#include "shardplan/core/temp_file.hpp"

namespace shardplan {

class OutputFiles {
 public:
  OutputFiles();
  ~OutputFiles();  // what was staged and not committed is removed
  OutputFiles(const OutputFiles&) = delete;
  OutputFiles& operator=(const OutputFiles&) = delete;

  // Throws InputError for a path resolve_output refuses, RuntimeFailure when the content cannot be
  // written; nothing is committed then.
  void stage(const std::string& path, std::string_view content);
  // Writes into the devices, FIFOs and standard output first (they can fail: /dev/full, a closed pipe),
  // then renames every staged file into place. Throws RuntimeFailure on an I/O error.
  void commit();

 private:
  struct Staged {
    std::string path;  // as given
    OutputTarget target;
    std::unique_ptr<TempFile> temp;  // kReplace
    std::string content;             // the others, written at commit
  };
  std::vector<Staged> staged_;
};

// One output on its own. Throws RuntimeFailure on I/O errors (the target is untouched).
void write_file_atomically(const std::string& path, std::string_view content);

}  // namespace shardplan
