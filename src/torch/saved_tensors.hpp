#pragma once
// The object graph of a torch.save archive (its data.pkl) without the tensor data: LibTorch's unpickler
// reads the pickle, and every storage it asks for is handed a placeholder that carries only the record's
// name, so shapes, strides and dtypes come out while no byte of tensor data is loaded. The data is then read
// piecewise from the zip file (zip_reader.hpp). This header keeps torch types out of its users.
#include <cstdint>
#include <string>
#include <vector>

namespace shardplan::torchio {

enum class ElementType { kInt64, kInt32, kOther };

struct SavedTensor {
  std::string record;  // storage key in the archive: the data lives in "<prefix>data/<record>"
  ElementType type = ElementType::kOther;
  std::string dtype_name;  // e.g. "Long", for messages
  int itemsize = 0;
  int64_t storage_bytes = 0;   // size of the storage the pickle declares
  int64_t storage_offset = 0;  // in elements
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;  // in elements
};

// Parses `pickle` (the archive's data.pkl; `version` from its "version" record) whose top-level object
// must be a tuple or list of tensors. Throws InputError naming `source` when the pickle is malformed or
// holds anything else.
std::vector<SavedTensor> read_tensor_sequence(const std::string& pickle, uint64_t version, const std::string& source);

}  // namespace shardplan::torchio
