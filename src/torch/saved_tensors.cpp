// The only importer file that includes LibTorch: it runs LibTorch's unpickler over data.pkl.
#include "saved_tensors.hpp"

#include <fmt/format.h>
#include <torch/csrc/jit/serialization/unpickler.h>

#include <algorithm>
#include <cstring>

#include "shardplan/core/errors.hpp"
#include "shardplan/importer/pickle_guard.hpp"

namespace shardplan::torchio {

namespace {

// The placeholder storage: no data (nullptr), the record name as its context. Anything that touched the
// data would fault at once instead of reading garbage; only metadata is looked at.
void delete_record_name(void* context) { delete static_cast<std::string*>(context); }

c10::DataPtr placeholder_storage(const std::string& record) {
  return c10::DataPtr(nullptr, new std::string(record), &delete_record_name, c10::Device(c10::kCPU));
}

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

SavedTensor describe_tensor(const at::Tensor& tensor) {
  SavedTensor saved;
  switch (tensor.scalar_type()) {
    case at::kLong:
      saved.type = ElementType::kInt64;
      break;
    case at::kInt:
      saved.type = ElementType::kInt32;
      break;
    default:
      saved.type = ElementType::kOther;
      break;
  }
  saved.dtype_name = c10::toString(tensor.scalar_type());
  saved.itemsize = static_cast<int>(tensor.element_size());
  const c10::Storage& storage = tensor.storage();
  saved.storage_bytes = static_cast<int64_t>(storage.nbytes());
  const c10::DataPtr& data = storage.data_ptr();
  // Empty storages are never requested from the archive, so they carry no record name.
  if (data.get_deleter() == &delete_record_name) saved.record = *static_cast<const std::string*>(data.get_context());
  saved.storage_offset = tensor.storage_offset();
  saved.sizes = tensor.sizes().vec();
  saved.strides = tensor.strides().vec();
  return saved;
}

}  // namespace

std::vector<SavedTensor> read_tensor_sequence(const std::string& pickle, uint64_t version, const std::string& source) {
  check_tensor_pickle(pickle, source);  // LibTorch's unpickler may crash on damaged input; see pickle_guard.hpp
  std::size_t pos = 0;
  auto reader = [&](char* dst, std::size_t n) -> std::size_t {
    std::size_t k = std::min(n, pickle.size() - pos);
    std::memcpy(dst, pickle.data() + pos, k);
    pos += k;
    return k;
  };
  c10::IValue value;
  try {
    // No type resolver: a plain tuple of tensors needs none, and anything with classes is refused anyway.
    // Every storage is mapped to the CPU so CUDA-saved files read the same.
    torch::jit::Unpickler unpickler(reader, nullptr, nullptr, placeholder_storage, c10::Device(c10::kCPU));
    unpickler.set_version(version);
    value = unpickler.parse_ivalue();
  } catch (const c10::Error& e) {
    throw InputError(fmt::format("{}: data.pkl cannot be read as a tuple of tensors: {}", source,
                                 first_line(e.what_without_backtrace())));
  } catch (const std::exception& e) {
    throw InputError(
        fmt::format("{}: data.pkl cannot be read as a tuple of tensors: {}", source, first_line(e.what())));
  }

  std::vector<c10::IValue> elements;
  if (value.isTuple()) {
    const auto& items = value.toTupleRef().elements();
    elements.assign(items.begin(), items.end());
  } else if (value.isList()) {
    for (const c10::IValue& item : value.toListRef()) elements.push_back(item);
  } else {
    throw InputError(fmt::format("{}: the saved object is a {}, expected a tuple of tensors", source, value.tagKind()));
  }
  std::vector<SavedTensor> tensors;
  tensors.reserve(elements.size());
  for (std::size_t i = 0; i < elements.size(); ++i) {
    if (!elements[i].isTensor()) {
      throw InputError(fmt::format("{}: element {} of the saved tuple is a {}, expected a tensor", source, i,
                                   elements[i].tagKind()));
    }
    const at::Tensor& tensor = elements[i].toTensor();
    if (tensor.layout() != c10::kStrided || tensor.is_quantized()) {
      throw InputError(fmt::format("{}: element {} of the saved tuple is not a dense tensor", source, i));
    }
    tensors.push_back(describe_tensor(tensor));
  }
  return tensors;
}

}  // namespace shardplan::torchio
