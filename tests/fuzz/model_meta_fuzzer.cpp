// libFuzzer target: a model directory's meta.json as the loader reads it (everything but the weights).
#include "fuzz_input.hpp"
#include "model_meta.hpp"
#include "shardplan/core/errors.hpp"
#include "shardplan/core/json_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace shardplan;
  try {
    parse_model_meta(parse_json_text(fuzz::as_text(data, size), "meta.json"), "meta.json");
  } catch (const InputError&) {
  }
  return 0;
}
