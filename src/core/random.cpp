#include "shardplan/core/random.hpp"

#include <cmath>

#include "shardplan/core/strict_fp.hpp"

namespace shardplan {

namespace {
__extension__ typedef unsigned __int128 u128;  // GCC and Clang; __extension__ keeps -Wpedantic quiet
}  // namespace

uint64_t derive_seed(uint64_t seed, uint64_t stream) {
  uint64_t z = seed + 0x9E3779B97F4A7C15ull * (stream + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t fnv1a_hash(std::string_view text) {
  uint64_t hash = 0xCBF29CE484222325ull;
  for (unsigned char c : text) hash = (hash ^ c) * 0x100000001B3ull;
  return hash;
}

double Rng::uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }

double Rng::uniform_positive() { return (static_cast<double>(engine_() >> 11) + 1.0) * 0x1.0p-53; }

uint64_t Rng::below(uint64_t n) {
  // The high word of x * n is uniform in [0, n) once the few x whose low word falls under
  // (2^64 - n) mod n are rejected.
  u128 product = static_cast<u128>(engine_()) * n;
  auto low = static_cast<uint64_t>(product);
  if (low < n) {
    const uint64_t threshold = (0 - n) % n;
    while (low < threshold) {
      product = static_cast<u128>(engine_()) * n;
      low = static_cast<uint64_t>(product);
    }
  }
  return static_cast<uint64_t>(product >> 64);
}

double Rng::normal() {
  if (has_spare_normal_) {
    has_spare_normal_ = false;
    return spare_normal_;
  }
  double u = 0.0;
  double v = 0.0;
  double s = 0.0;
  do {
    u = 2.0 * uniform() - 1.0;
    v = 2.0 * uniform() - 1.0;
    s = u * u + v * v;
  } while (s >= 1.0 || s == 0.0);
  const double scale = std::sqrt(-2.0 * std::log(s) / s);
  spare_normal_ = v * scale;
  has_spare_normal_ = true;
  return u * scale;
}

double Rng::exponential() { return -std::log(uniform_positive()); }

}  // namespace shardplan
