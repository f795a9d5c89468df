#pragma once
// A temporary file that does not outlive the process, however the process ends: removed by its owner
// (the destructor, unless it was renamed into place), and by a fatal signal's handler (SIGINT, SIGTERM,
// SIGHUP, SIGQUIT, SIGPIPE, SIGXFSZ) before the signal takes its default course. Only SIGKILL and a
// power cut leave one behind.
#include <filesystem>
#include <string>

namespace shardplan {

class TempFile {
 public:
  // Creates ".NAME.tmp.XXXXXX" in `dir`, open for writing. Throws RuntimeFailure naming `target` when it
  // cannot.
  TempFile(const std::filesystem::path& dir, const std::string& name, const std::string& target);
  ~TempFile();
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  int fd() const { return fd_; }
  const std::string& path() const { return path_; }
  // Closes the descriptor (the file stays); throws RuntimeFailure when the close reports an error.
  void close();
  // Renames the file to `to` (in the same directory); from then on it is no longer temporary.
  void rename_to(const std::string& to);

 private:
  int fd_ = -1;
  int slot_ = -1;  // in the table the signal handler reads
  std::string path_;
  std::string target_;
};

// Removes every temporary file still registered. Async-signal-safe: the interrupt handler
// (interrupt.hpp) calls it before it ends the process.
void remove_temp_files_now() noexcept;

}  // namespace shardplan
