// libFuzzer target: a model's weights file as the loader checks it before LibTorch reads it (the zip
// reader, every entry's CRC-32, stored or deflated, and the SHA-256 meta.json records). Bad input may
// only ever end in InputError.
#include <sys/mman.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "fuzz_input.hpp"
#include "model_verify.hpp"
#include "shardplan/core/errors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace shardplan;
  const int fd = ::memfd_create("compute.pt", MFD_CLOEXEC);
  if (fd < 0) return 0;
  for (std::size_t done = 0; done < size;) {
    const ssize_t n = ::write(fd, data + done, size - done);
    if (n <= 0) {
      ::close(fd);
      return 0;
    }
    done += static_cast<std::size_t>(n);
  }
  // Half the inputs are checked against a record of their own hash, so that the accepting path runs too.
  nlohmann::json meta = nlohmann::json::object();
  if (size > 0 && (data[0] & 1) != 0)
    meta[kModelFilesKey] = model_files_record({{"compute.pt", fuzz::as_text(data, size)}});
  try {
    const torchio::RandomAccessFile file(fd, "compute.pt");  // owns fd from here
    verify_model_archive(file, meta, "meta.json");
  } catch (const InputError&) {
  }
  return 0;
}
