#pragma once
// Test inputs in the dlrm_datasets format, written with LibTorch, and the statistics the importer should
// derive from them, computed here independently (std::map counts, a loop for the bins).
#include <torch/types.h>

#include <array>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "../support/temp_dir.hpp"

namespace shardplan::test {

using testing::TempDir;

// Writes `value` the way Python's torch.save does. torch::pickle_save produces the same zip container as
// torch.save in PyTorch >= 1.6: entries <archive>/data.pkl (pickle protocol 2, every tensor rebuilt by
// torch._utils._rebuild_tensor_v2 from a persistent id ('storage', torch.LongStorage, key, 'cpu', numel)),
// <archive>/data/<key> with the raw little-endian storage, and <archive>/version. Views keep their storage
// offset and strides, as in Python.
void save_like_torch(const std::string& path, const c10::IValue& value);
void save_triple(const std::string& path, const torch::Tensor& indices, const torch::Tensor& offsets,
                 const torch::Tensor& lengths);

// gzip-compresses `from` into `to`, as `gzip` would.
void gzip_file(const std::string& from, const std::string& to);
std::string read_bytes(const std::string& path);
void write_bytes(const std::string& path, const std::string& bytes);

// A dataset in memory: lengths [tables][batch], ids of all bags concatenated.
struct Dataset {
  int64_t tables = 0;
  int64_t batch = 0;
  std::vector<int64_t> lengths;  // tables * batch, row-major
  std::vector<int64_t> ids;

  torch::Tensor indices_tensor() const;
  torch::Tensor offsets_tensor(bool closed) const;  // tables*batch+1 entries if closed
  torch::Tensor lengths_tensor() const;             // [tables, batch]
};

// A random dataset with skewed ids, so the reuse counts spread over many bins.
Dataset random_dataset(int64_t tables, int64_t batch, uint64_t seed);
// Rebuilds a Dataset from (indices, offsets, lengths) loaded by LibTorch's own loader.
Dataset dataset_from_tensors(const torch::Tensor& indices, const torch::Tensor& offsets, const torch::Tensor& lengths);

struct ExpectedTable {
  int64_t rows = 0;
  double pooling_factor = 0.0;
  std::array<double, 17> hist{};
};

// The statistics of every table, by definition: rows = max(max id + 1, 100), mean bag length, and the
// fraction of distinct ids whose count falls in (0,1], (1,2], (2,4], ..., (32768,inf).
std::vector<ExpectedTable> expected_statistics(const Dataset& data);

}  // namespace shardplan::test
