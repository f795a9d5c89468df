#pragma once
// Output files are never half-written: content goes to a temporary file beside the target, is flushed
// to disk, and is renamed over the target only when complete.
#include <string>
#include <string_view>

namespace shardplan {

// Writes `content` to `path` atomically. Throws RuntimeFailure on I/O errors (the target is untouched).
void write_file_atomically(const std::string& path, std::string_view content);

}  // namespace shardplan
