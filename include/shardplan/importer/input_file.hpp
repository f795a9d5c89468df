#pragma once
// Opening an input that may be gzipped. No LibTorch here.
#include <memory>
#include <string>

#include "shardplan/importer/zip_reader.hpp"

namespace shardplan::torchio {

struct OpenedInput {
  std::unique_ptr<RandomAccessFile> file;  // named after the user's path, whatever backs it
  bool gunzipped = false;
  uint64_t compressed_bytes = 0;  // size of the gzip file, when gunzipped
};

// The directory for unpacked temporaries: `requested` if given, else $TMPDIR, else /tmp.
std::string resolve_temp_dir(const std::string& requested);

// Opens `path` for random access. A gzip file (recognised by its magic bytes, whatever its name) is
// streamed through zlib into an anonymous temporary file in `temp_dir`: the file is unlinked as soon as it
// is created, so nothing is left behind even if the process is killed, and its disk space (the unpacked
// size) is freed when the returned file is closed. Throws InputError for a missing, unreadable or corrupt
// input, SettingError("temporary directory") when `temp_dir` does not exist and SettingFailure (a
// RuntimeFailure) when the temporary cannot be created or written there (e.g. the disk is full).
OpenedInput open_maybe_gzipped(const std::string& path, const std::string& temp_dir);

}  // namespace shardplan::torchio
