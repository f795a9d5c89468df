// libFuzzer target: an input file as import-dlrm opens it (importer/input_file.hpp: plain or gzipped,
// gunzipped into an unlinked temporary), then read as the zip of a torch.save: every entry listed, each
// small one read whole, a data.pkl through the pickle guard, and the ids of any other entry through the
// trace statistics. Bad input may only ever end in InputError.
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fuzz_input.hpp"
#include "shardplan/core/errors.hpp"
#include "shardplan/importer/input_file.hpp"
#include "shardplan/importer/pickle_guard.hpp"
#include "shardplan/importer/trace_statistics.hpp"
#include "shardplan/importer/zip_reader.hpp"

namespace {

// The input as a file of its own, removed when done: open_maybe_gzipped takes a path.
struct InputOnDisk {
  std::string path;
  bool ok = false;
  InputOnDisk(const uint8_t* data, std::size_t size) {
    std::string name = shardplan::torchio::resolve_temp_dir("") + "/shardplan-fuzz-XXXXXX";
    std::vector<char> templ(name.begin(), name.end());
    templ.push_back('\0');
    const int fd = ::mkstemp(templ.data());
    if (fd < 0) return;
    path = templ.data();
    std::size_t done = 0;
    while (done < size) {
      const ssize_t n = ::write(fd, data + done, size - done);
      if (n <= 0) break;
      done += static_cast<std::size_t>(n);
    }
    ::close(fd);
    ok = done == size;
  }
  ~InputOnDisk() {
    if (!path.empty()) ::unlink(path.c_str());
  }
};

// Each entry's bytes as the importer would read them: ids (int64, little-endian) except data.pkl.
void read_entries(const shardplan::torchio::RandomAccessFile& file) {
  using namespace shardplan;
  const torchio::ZipReader zip(file);
  for (const torchio::ZipEntry& entry : zip.entries()) {
    if (entry.uncompressed_size > (1u << 20)) continue;
    const std::string bytes = zip.read_small(entry, 1u << 20);
    const std::size_t slash = entry.name.rfind('/');
    if (entry.name.substr(slash == std::string::npos ? 0 : slash + 1) == "data.pkl") {
      torchio::check_tensor_pickle(bytes, entry.name);
      continue;
    }
    std::vector<int64_t> ids(bytes.size() / sizeof(int64_t));
    if (!ids.empty()) std::memcpy(ids.data(), bytes.data(), ids.size() * sizeof(int64_t));
    table_statistics(ids, 0, 0, 1 + static_cast<int64_t>(bytes.size() % 64), 16, entry.name);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace shardplan;
  const InputOnDisk input(data, size);
  if (!input.ok) return 0;
  try {
    const torchio::OpenedInput opened = torchio::open_maybe_gzipped(input.path, "");
    read_entries(*opened.file);
  } catch (const InputError&) {
  }
  return 0;
}
