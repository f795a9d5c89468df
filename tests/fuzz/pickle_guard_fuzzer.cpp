// libFuzzer target: the gate in front of LibTorch's unpickler (importer/pickle_guard.hpp), which walks a
// saved tensor list's data.pkl before LibTorch may. Bad input may only ever end in InputError.
#include <string>

#include "fuzz_input.hpp"
#include "shardplan/core/errors.hpp"
#include "shardplan/importer/pickle_guard.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace shardplan;
  try {
    torchio::check_tensor_pickle(std::string(fuzz::as_text(data, size)), "data.pkl");
  } catch (const InputError&) {
  }
  return 0;
}
