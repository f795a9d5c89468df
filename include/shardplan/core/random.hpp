#pragma once
// Seeded randomness for the benchmark dataset. The standard's distributions (uniform_*, normal_...) are
// implementation-defined algorithms whose outputs differ between standard libraries; everything here
// derives from the raw 64-bit output of std::mt19937_64 (fully specified by the standard), so a seed
// gives the same pool, tasks and traces on every platform.
#include <cstdint>
#include <random>
#include <string_view>
#include <utility>
#include <vector>

namespace shardplan {

// An independent seed for sub-stream `stream` of `seed` (SplitMix64 finaliser), so that adding a draw to
// one stream (e.g. pooling factors) does not shift another (e.g. row counts).
uint64_t derive_seed(uint64_t seed, uint64_t stream);

// FNV-1a: a stable 64-bit hash of text (names, file contents), the same on every platform.
uint64_t fnv1a_hash(std::string_view text);

class Rng {
 public:
  explicit Rng(uint64_t seed) : engine_(seed) {}

  uint64_t next_u64() { return engine_(); }
  // Uniform in [0, 1) with 53 random bits.
  double uniform();
  // Uniform in (0, 1]: safe to take the logarithm of.
  double uniform_positive();
  // Uniform integer in [0, n), n >= 1, without modulo bias (Lemire's multiply-and-reject).
  uint64_t below(uint64_t n);
  // Standard normal (Marsaglia's polar method: only log and sqrt, no trigonometry).
  double normal();
  // Exponential with mean 1.
  double exponential();

  template <typename T>
  void shuffle(std::vector<T>& values) {
    for (std::size_t i = values.size(); i > 1; --i) {
      std::size_t j = static_cast<std::size_t>(below(static_cast<uint64_t>(i)));
      std::swap(values[i - 1], values[j]);
    }
  }

 private:
  std::mt19937_64 engine_;
  double spare_normal_ = 0.0;
  bool has_spare_normal_ = false;
};

}  // namespace shardplan
