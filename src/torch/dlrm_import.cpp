// Importer for dlrm_datasets files (see dlrm_import.hpp). No LibTorch headers here: the pickle is read by
// saved_tensors.cpp, everything else works on the zip file directly.
#include "shardplan/torch/dlrm_import.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "saved_tensors.hpp"
#include "shardplan/core/errors.hpp"
#include "shardplan/core/progress.hpp"
#include "shardplan/importer/input_file.hpp"
#include "shardplan/importer/trace_statistics.hpp"
#include "shardplan/importer/zip_reader.hpp"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "tensor records are read as little-endian host integers");

namespace shardplan {

namespace {

using torchio::ElementType;
using torchio::RandomAccessFile;
using torchio::SavedTensor;
using torchio::ZipEntry;
using torchio::ZipReader;

constexpr uint64_t kMaxPickleBytes = 64 << 20;  // the pickle of three tensors is a few hundred bytes
constexpr int64_t kChunkElements = 1 << 20;     // bags per read while checking offsets against lengths

// One integer tensor of the archive, bounds-checked against its record, read piecewise from the file.
class StoredTensor {
 public:
  // `may_repeat`: whether the view may show storage elements more than once (an expanded tensor). Only
  // lengths may: there the count of bags bounds the work, while indices and offsets bound it by the file.
  StoredTensor(const RandomAccessFile& file, const ZipReader& zip, const std::string& prefix, SavedTensor meta,
               const char* role, std::size_t dims, bool may_repeat)
      : file_(file), meta_(std::move(meta)), role_(role) {
    const std::string& source = file.name();
    if (meta_.type == ElementType::kOther) {
      throw InputError(fmt::format("{}: {} has dtype {}, expected an integer tensor (int64 or int32)", source, role_,
                                   meta_.dtype_name));
    }
    if (meta_.sizes.size() != dims) {
      throw InputError(fmt::format("{}: {} has {} dimension{} (shape {}), expected {}", source, role_,
                                   meta_.sizes.size(), meta_.sizes.size() == 1 ? "" : "s", shape(), dims));
    }
    numel_ = 1;
    int64_t last = meta_.storage_offset;  // highest storage element the view touches
    for (std::size_t d = 0; d < dims; ++d) {
      int64_t size = meta_.sizes[d];
      int64_t stride = meta_.strides[d];
      if (size < 0 || stride < 0) throw InputError(fmt::format("{}: {}: invalid shape {}", source, role_, shape()));
      if (__builtin_mul_overflow(numel_, size, &numel_)) {
        throw InputError(fmt::format("{}: {}: shape {} is too large", source, role_, shape()));
      }
      int64_t reach = 0;
      if (size > 0 &&
          (__builtin_mul_overflow(size - 1, stride, &reach) || __builtin_add_overflow(last, reach, &last))) {
        throw InputError(fmt::format("{}: {}: shape {} is too large", source, role_, shape()));
      }
    }
    if (numel_ == 0) return;  // nothing to read; an empty storage has no record
    const int64_t storage_elements = meta_.storage_bytes / meta_.itemsize;
    if (meta_.storage_offset < 0 || last >= storage_elements) {
      throw InputError(fmt::format("{}: {}: the view (shape {}, offset {}) reaches past its storage of {} elements",
                                   source, role_, shape(), meta_.storage_offset, storage_elements));
    }
    if (!may_repeat && numel_ > storage_elements) {
      throw InputError(fmt::format("{}: {} has {} elements but stores only {}: an expanded view, which {} cannot be",
                                   source, role_, numel_, storage_elements, role_));
    }
    const std::string record = prefix + "data/" + meta_.record;
    const ZipEntry* entry = zip.find(record);
    if (meta_.record.empty() || entry == nullptr) {
      throw InputError(fmt::format("{}: {}: its data record {} is missing from the archive", source, role_, record));
    }
    if (entry->method != 0) {
      throw InputError(
          fmt::format("{}: {}: record {} is compressed inside the zip (method {}); torch.save stores "
                      "records uncompressed, so the archive was repacked: re-save it with torch.save",
                      source, role_, record, entry->method));
    }
    const uint64_t record_bytes = std::min(entry->compressed_size, entry->uncompressed_size);  // equal when stored
    if (record_bytes < static_cast<uint64_t>(meta_.storage_bytes)) {
      throw InputError(fmt::format("{}: {}: record {} holds {} bytes, the pickle declares {}", source, role_, record,
                                   record_bytes, meta_.storage_bytes));
    }
    data_offset_ = zip.stored_data_offset(*entry);
  }

  int64_t numel() const { return numel_; }
  int64_t size(std::size_t d) const { return meta_.sizes[d]; }
  // Storage element of the view's element (i0) or (i0, i1).
  int64_t element(int64_t i0, int64_t i1 = 0) const {
    int64_t e = meta_.storage_offset + i0 * meta_.strides[0];
    if (meta_.sizes.size() > 1) e += i1 * meta_.strides[1];
    return e;
  }
  int64_t stride(std::size_t d) const { return meta_.strides[d]; }

  // Reads `count` elements starting at storage element `first`, `stride` apart, as int64 into `out`.
  void read(int64_t first, int64_t stride, int64_t count, int64_t* out) const {
    if (count <= 0) return;
    if (stride == 0) {  // an expanded tensor: one stored element seen everywhere
      read(first, 1, 1, out);
      std::fill(out + 1, out + count, out[0]);
      return;
    }
    const auto item = static_cast<uint64_t>(meta_.itemsize);
    if (stride == 1 || count == 1) {
      // One contiguous range, read straight into `out`; int32 is widened in place from the back, where
      // every 8-byte write lands on 4-byte elements already consumed.
      file_.read_exact(data_offset_ + static_cast<uint64_t>(first) * item, out, static_cast<std::size_t>(count) * item,
                       role_);
      if (meta_.type == ElementType::kInt32) {
        const char* bytes = reinterpret_cast<const char*>(out);
        for (int64_t i = count; i-- > 0;) {
          int32_t v;
          std::memcpy(&v, bytes + i * 4, 4);
          out[i] = v;
        }
      }
      return;
    }
    // A strided view (rare: torch.save keeps views as they were): read covering blocks and pick.
    const int64_t per_block = std::max<int64_t>(1, (int64_t{8} << 20) / (stride * meta_.itemsize));
    std::vector<char> block;
    for (int64_t done = 0; done < count;) {
      int64_t k = std::min(per_block, count - done);
      std::size_t bytes = static_cast<std::size_t>(((k - 1) * stride + 1) * meta_.itemsize);
      block.resize(bytes);
      file_.read_exact(data_offset_ + static_cast<uint64_t>(first + done * stride) * item, block.data(), bytes, role_);
      for (int64_t i = 0; i < k; ++i) {
        const char* p = block.data() + i * stride * meta_.itemsize;
        if (meta_.type == ElementType::kInt64) {
          std::memcpy(&out[done + i], p, 8);
        } else {
          int32_t v;
          std::memcpy(&v, p, 4);
          out[done + i] = v;
        }
      }
      done += k;
    }
  }

  std::string shape() const {
    std::string text = "[";
    for (std::size_t d = 0; d < meta_.sizes.size(); ++d) text += (d ? ", " : "") + std::to_string(meta_.sizes[d]);
    return text + "]";
  }

 private:
  const RandomAccessFile& file_;
  SavedTensor meta_;
  const char* role_;
  int64_t numel_ = 0;
  uint64_t data_offset_ = 0;
};

// The directory every entry of a torch.save archive lives in ("archive/", or the file's stem), found from
// its data.pkl.
std::string archive_prefix(const ZipReader& zip, const std::string& source) {
  const std::string suffix = "/data.pkl";
  for (const auto& entry : zip.entries()) {
    const std::string& name = entry.name;
    // "<dir>/data.pkl" with <dir> a single non-empty component.
    if (name.size() > suffix.size() && name.find('/') == name.size() - suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      return name.substr(0, name.size() - suffix.size() + 1);
    }
  }
  throw InputError(fmt::format("{}: a zip archive without data.pkl: not a file written by torch.save", source));
}

uint64_t archive_version(const ZipReader& zip, const std::string& prefix, const std::string& source) {
  const ZipEntry* entry = zip.find(prefix + "version");
  if (entry == nullptr) entry = zip.find(prefix + ".data/version");  // where newer PyTorch writes it
  if (entry == nullptr) return 3;                                    // the format version PyTorch 1.6 .. 1.13 writes
  std::string text = zip.read_small(*entry, 64);
  try {
    return std::stoull(text);
  } catch (const std::exception&) {
    throw InputError(fmt::format("{}: archive version record is not a number: '{}'", source, text));
  }
}

// Bag boundaries per table, from a full pass over offsets and lengths that checks they agree.
struct Layout {
  int64_t tables = 0;
  int64_t batch = 0;
  bool offsets_closed = true;
  std::vector<int64_t> table_start;  // tables+1 positions into indices
};

Layout check_layout(const StoredTensor& indices, const StoredTensor& offsets, const StoredTensor& lengths,
                    const std::string& source) {
  Layout layout;
  layout.tables = lengths.size(0);
  layout.batch = lengths.size(1);
  if (layout.tables == 0) throw InputError(fmt::format("{}: lengths has shape {}: no tables", source, lengths.shape()));
  if (layout.batch == 0) {
    throw InputError(fmt::format("{}: lengths has shape {}: batch size 0", source, lengths.shape()));
  }
  const int64_t bags = lengths.numel();
  if (offsets.numel() == bags + 1) {
    layout.offsets_closed = true;
  } else if (offsets.numel() == bags) {
    layout.offsets_closed = false;
  } else {
    throw InputError(
        fmt::format("{}: offsets has {} entries, but lengths (shape {}) describes {} bags: expected {} "
                    "(or {})",
                    source, offsets.numel(), lengths.shape(), bags, bags + 1, bags));
  }
  const int64_t total = indices.numel();
  layout.table_start.reserve(static_cast<std::size_t>(layout.tables) + 1);
  std::vector<int64_t> len(static_cast<std::size_t>(std::min(layout.batch, kChunkElements)));
  std::vector<int64_t> off(len.size());
  int64_t pos = 0;  // sum of the lengths of all bags so far
  for (int64_t t = 0; t < layout.tables; ++t) {
    layout.table_start.push_back(pos);
    for (int64_t b0 = 0; b0 < layout.batch; b0 += kChunkElements) {
      const int64_t n = std::min(kChunkElements, layout.batch - b0);
      const int64_t bag0 = t * layout.batch + b0;
      lengths.read(lengths.element(t, b0), lengths.stride(1), n, len.data());
      offsets.read(offsets.element(bag0), offsets.stride(0), n, off.data());
      for (int64_t i = 0; i < n; ++i) {
        const int64_t l = len[static_cast<std::size_t>(i)];
        const int64_t o = off[static_cast<std::size_t>(i)];
        if (l < 0) {
          throw InputError(fmt::format("{}: lengths[{}][{}] is {}: negative", source, t, b0 + i, l));
        }
        if (o != pos) {
          throw InputError(
              fmt::format("{}: offsets[{}] is {}, but the lengths of the bags before it sum to {} "
                          "(table {}, bag {}): offsets and lengths disagree",
                          source, bag0 + i, o, pos, t, b0 + i));
        }
        if (l > total - pos) {
          throw InputError(
              fmt::format("{}: lengths run past the {} indices at table {}, bag {}", source, total, t, b0 + i));
        }
        pos += l;
      }
    }
  }
  layout.table_start.push_back(pos);
  if (layout.offsets_closed) {
    int64_t end = 0;
    offsets.read(offsets.element(bags), 1, 1, &end);
    if (end != pos) {
      throw InputError(
          fmt::format("{}: the last offset, offsets[{}], is {}, but the lengths sum to {}", source, bags, end, pos));
    }
  }
  if (pos != total) {
    throw InputError(fmt::format("{}: the lengths sum to {}, but indices has {} entries", source, pos, total));
  }
  return layout;
}

}  // namespace

DlrmImport import_dlrm_dataset(const std::string& path, const DlrmImportOptions& options) {
  if (options.dim < 4 || options.dim % 4 != 0 || options.dim > kMaxDim) {
    throw InputError(fmt::format("dim: must be a positive multiple of 4 up to {}, got {}", kMaxDim, options.dim));
  }
  torchio::OpenedInput input = torchio::open_maybe_gzipped(path, options.temp_dir);
  const RandomAccessFile& file = *input.file;
  ZipReader zip(file);
  const std::string prefix = archive_prefix(zip, path);
  if (const ZipEntry* order = zip.find(prefix + "byteorder")) {
    std::string text = zip.read_small(*order, 64);
    if (text != "little") {
      throw InputError(
          fmt::format("{}: saved with byte order '{}'; only little-endian files are supported", path, text));
    }
  }
  const uint64_t version = archive_version(zip, prefix, path);
  std::vector<SavedTensor> saved =
      torchio::read_tensor_sequence(zip.read_small(*zip.find(prefix + "data.pkl"), kMaxPickleBytes), version, path);
  if (saved.size() != 3) {
    throw InputError(fmt::format("{}: the saved tuple has {} element{}, expected 3: (indices, offsets, lengths)", path,
                                 saved.size(), saved.size() == 1 ? "" : "s"));
  }
  StoredTensor indices(file, zip, prefix, std::move(saved[0]), "indices", 1, /*may_repeat=*/false);
  StoredTensor offsets(file, zip, prefix, std::move(saved[1]), "offsets", 1, /*may_repeat=*/false);
  StoredTensor lengths(file, zip, prefix, std::move(saved[2]), "lengths", 2, /*may_repeat=*/true);
  spdlog::info("{}: indices {}, offsets {}, lengths {}", path, indices.shape(), offsets.shape(), lengths.shape());

  const Layout layout = check_layout(indices, offsets, lengths, path);
  DlrmImport result;
  DlrmImportSummary& summary = result.summary;
  summary.tables = layout.tables;
  summary.batch_size = layout.batch;
  summary.total_ids = indices.numel();
  summary.mean_pooling_factor =
      static_cast<double>(summary.total_ids) / (static_cast<double>(layout.tables) * static_cast<double>(layout.batch));
  summary.gunzipped = input.gunzipped;
  summary.offsets_closed = layout.offsets_closed;

  result.tables.reserve(static_cast<std::size_t>(layout.tables));
  std::vector<int64_t> ids;
  Progress progress("tables", layout.tables, 0, options.quiet);
  for (int64_t t = 0; t < layout.tables; ++t) {
    const int64_t first = layout.table_start[static_cast<std::size_t>(t)];
    const int64_t count = layout.table_start[static_cast<std::size_t>(t) + 1] - first;
    summary.largest_table_ids = std::max(summary.largest_table_ids, count);
    // Grow by dropping the old buffer first, so two table-sized buffers never coexist.
    if (static_cast<std::size_t>(count) > ids.capacity()) std::vector<int64_t>().swap(ids);
    ids.resize(static_cast<std::size_t>(count));
    indices.read(indices.element(first), indices.stride(0), count, ids.data());
    result.tables.push_back(table_statistics(ids, t, first, layout.batch, options.dim, path));
    progress.update(t + 1, fmt::format("{:.1f}M of {:.1f}M ids",
                                       static_cast<double>(layout.table_start[static_cast<std::size_t>(t) + 1]) / 1e6,
                                       static_cast<double>(summary.total_ids) / 1e6));
  }
  progress.finish();
  return result;
}

}  // namespace shardplan
