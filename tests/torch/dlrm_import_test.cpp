// The dlrm_datasets importer on files in the real format written by LibTorch, checked against statistics
// computed independently (dlrm_files.cpp), and on bad files of every kind.
#include <caffe2/serialize/inline_container.h>
#include <gtest/gtest.h>
#include <torch/serialize.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>

#include "dlrm_files.hpp"
#include "shardplan/core/errors.hpp"
#include "shardplan/torch/dlrm_import.hpp"

namespace shardplan {
namespace {

using test::Dataset;
using test::TempDir;

void expect_statistics(const DlrmImport& got, const Dataset& data, int dim = kDlrmDefaultDim) {
  const auto expected = test::expected_statistics(data);
  ASSERT_EQ(got.tables.size(), expected.size());
  for (std::size_t t = 0; t < expected.size(); ++t) {
    const Table& table = got.tables[t];
    SCOPED_TRACE("table " + std::to_string(t));
    EXPECT_EQ(table.name, "t" + std::to_string(t));
    EXPECT_EQ(table.rows, expected[t].rows);
    EXPECT_EQ(table.dim, dim);
    EXPECT_EQ(table.pooling_factor, expected[t].pooling_factor);  // same division: exact
    ASSERT_TRUE(table.reuse_hist.has_value());
    for (std::size_t b = 0; b < expected[t].hist.size(); ++b) {
      EXPECT_EQ((*table.reuse_hist)[b], expected[t].hist[b]) << "bin " << b;
    }
  }
  EXPECT_EQ(got.summary.tables, data.tables);
  EXPECT_EQ(got.summary.batch_size, data.batch);
  EXPECT_EQ(got.summary.total_ids, static_cast<int64_t>(data.ids.size()));
  EXPECT_DOUBLE_EQ(got.summary.mean_pooling_factor,
                   static_cast<double>(data.ids.size()) / static_cast<double>(data.tables * data.batch));
}

std::string save_dataset(const TempDir& dir, const std::string& name, const Dataset& data, bool closed = true) {
  std::string path = dir.path(name);
  test::save_triple(path, data.indices_tensor(), data.offsets_tensor(closed), data.lengths_tensor());
  return path;
}

TEST(DlrmImport, ReproducesTheStatisticsOfARealFormatFile) {
  TempDir dir;
  Dataset data = test::random_dataset(/*tables=*/14, /*batch=*/512, /*seed=*/1);
  std::string path = save_dataset(dir, "data.pt", data);
  DlrmImport got = import_dlrm_dataset(path);
  expect_statistics(got, data);
  EXPECT_TRUE(got.summary.offsets_closed);
  EXPECT_FALSE(got.summary.gunzipped);
}

TEST(DlrmImport, AcceptsOffsetsWithoutTheClosingEntry) {
  TempDir dir;
  Dataset data = test::random_dataset(5, 100, 2);
  DlrmImport got = import_dlrm_dataset(save_dataset(dir, "open.pt", data, /*closed=*/false));
  expect_statistics(got, data);
  EXPECT_FALSE(got.summary.offsets_closed);
}

TEST(DlrmImport, GzippedFileGivesTheSameTablesAndLeavesNoTemporary) {
  TempDir dir;
  Dataset data = test::random_dataset(6, 300, 3);
  std::string plain = save_dataset(dir, "data.pt", data);
  test::gzip_file(plain, dir.path("data.pt.gz"));
  TempDir temp;
  DlrmImportOptions options;
  options.temp_dir = temp.path("");
  DlrmImport got = import_dlrm_dataset(dir.path("data.pt.gz"), options);
  expect_statistics(got, data);
  EXPECT_TRUE(got.summary.gunzipped);
  EXPECT_TRUE(temp.files().empty());
  options.temp_dir = temp.path("missing");
  try {
    import_dlrm_dataset(dir.path("data.pt.gz"), options);
    ADD_FAILURE() << "a missing temporary directory was accepted";
  } catch (const SettingError& e) {
    EXPECT_EQ(e.setting(), "temporary directory");
    EXPECT_EQ(e.rule().rfind(options.temp_dir + " does not exist", 0), 0u) << e.rule();
  }
}

TEST(DlrmImport, ReadsInt32TensorsAndStridedViews) {
  TempDir dir;
  Dataset data = test::random_dataset(4, 64, 4);
  torch::Tensor indices = data.indices_tensor().to(torch::kInt);
  // offsets as a view into a larger storage, lengths as a transposed (column-major) view: torch.save keeps
  // views as they are, so the reader must honour storage offsets and strides.
  torch::Tensor offsets =
      torch::cat({torch::tensor({-7, -8, -9}, torch::kLong), data.offsets_tensor(true)}).slice(0, 3);
  torch::Tensor lengths = data.lengths_tensor().t().contiguous().t();
  ASSERT_FALSE(lengths.is_contiguous());
  std::string path = dir.path("views.pt");
  test::save_triple(path, indices, offsets, lengths);
  // LibTorch's own loader sees the views too, so the file really holds them.
  auto loaded = torch::pickle_load([&] {
    std::string bytes = test::read_bytes(path);
    return std::vector<char>(bytes.begin(), bytes.end());
  }());
  ASSERT_EQ(loaded.toTupleRef().elements()[1].toTensor().storage_offset(), 3);
  ASSERT_FALSE(loaded.toTupleRef().elements()[2].toTensor().is_contiguous());
  expect_statistics(import_dlrm_dataset(path), data);
}

TEST(DlrmImport, ReadsExpandedLengths) {
  // torch.save keeps an expanded tensor as one stored element with stride 0: every bag of length 2 here.
  const int64_t tables = 3, batch = 10;
  torch::Tensor lengths = torch::full({1, 1}, 2, torch::kLong).expand({tables, batch});
  torch::Tensor offsets = torch::arange(0, 2 * tables * batch + 1, 2, torch::kLong);
  torch::Tensor indices = torch::arange(2 * tables * batch, torch::kLong) % 3;
  TempDir dir;
  std::string path = dir.path("expanded.pt");
  test::save_triple(path, indices, offsets, lengths);
  std::string bytes = test::read_bytes(path);
  auto loaded = torch::pickle_load(std::vector<char>(bytes.begin(), bytes.end())).toTupleRef().elements();
  ASSERT_EQ(loaded[2].toTensor().stride(1), 0);  // the file really holds the expanded view
  Dataset data = test::dataset_from_tensors(indices, offsets, lengths);
  DlrmImport got = import_dlrm_dataset(path);
  expect_statistics(got, data);
  EXPECT_EQ(got.tables[0].pooling_factor, 2.0);
}

TEST(DlrmImport, EdgeTablesAndEveryReuseBin) {
  Dataset data;
  data.tables = 4;
  data.batch = 3;
  std::vector<std::vector<int64_t>> tables(4);
  // t0: never looked up. t1: small ids, rows floored at 100. t2: counts at the bin edges, up to the open
  // last bin (more than 32768 accesses). t3: a large id.
  tables[1] = {0, 5, 5};
  auto repeat = [&](int64_t id, int64_t count) {
    tables[2].insert(tables[2].end(), static_cast<std::size_t>(count), id);
  };
  repeat(7, 40000);
  repeat(3, 32768);
  repeat(1, 1);
  repeat(2, 2);
  repeat(4, 3);
  repeat(5, 4);
  repeat(6, 5);
  repeat(9, 16384);
  repeat(10, 16385);
  std::shuffle(tables[2].begin(), tables[2].end(), std::mt19937_64(5));
  tables[3] = {123456, 0, 0, 0};
  for (const auto& ids : tables) {
    // Split each table's ids over the batch's bags unevenly (the first bag gets the remainder).
    int64_t n = static_cast<int64_t>(ids.size());
    data.lengths.push_back(n - 2 * (n / 3));
    data.lengths.push_back(n / 3);
    data.lengths.push_back(n / 3);
    data.ids.insert(data.ids.end(), ids.begin(), ids.end());
  }
  TempDir dir;
  DlrmImportOptions options;
  options.dim = 16;
  DlrmImport got = import_dlrm_dataset(save_dataset(dir, "edges.pt", data), options);
  expect_statistics(got, data, 16);
  // And by hand, in case the independent computation shared a mistake.
  ASSERT_EQ(got.tables.size(), 4u);
  EXPECT_EQ(got.tables[0].rows, 100);
  EXPECT_EQ(got.tables[0].pooling_factor, 0.0);
  for (double h : *got.tables[0].reuse_hist) EXPECT_EQ(h, 0.0);
  EXPECT_EQ(got.tables[1].rows, 100);
  EXPECT_EQ(got.tables[1].pooling_factor, 1.0);
  EXPECT_EQ((*got.tables[1].reuse_hist)[0], 0.5);
  EXPECT_EQ((*got.tables[1].reuse_hist)[1], 0.5);
  const ReuseHist& h2 = *got.tables[2].reuse_hist;  // 9 distinct ids
  EXPECT_EQ(h2[0], 1.0 / 9);                        // count 1
  EXPECT_EQ(h2[1], 1.0 / 9);                        // 2
  EXPECT_EQ(h2[2], 2.0 / 9);                        // 3, 4
  EXPECT_EQ(h2[3], 1.0 / 9);                        // 5
  EXPECT_EQ(h2[14], 1.0 / 9);                       // 16384
  EXPECT_EQ(h2[15], 2.0 / 9);                       // 16385, 32768
  EXPECT_EQ(h2[16], 1.0 / 9);                       // 40000
  EXPECT_EQ(got.tables[3].rows, 123457);
  EXPECT_EQ(got.tables[3].dim, 16);
}

// Files written by Python's torch.save (tests/fixtures/dlrm/make_fixture.py), checked against the statistics
// Python computed when writing them and against LibTorch's own loader.
TEST(DlrmImport, ReadsFilesWrittenByPythonsTorchSave) {
  const std::string fixtures = std::string(SHARDPLAN_SOURCE_DIR) + "/tests/fixtures/dlrm/";
  std::ifstream in(fixtures + "tiny_t6_bs64.expected.json");
  ASSERT_TRUE(in) << "missing fixture in " << fixtures;
  const nlohmann::json expected = nlohmann::json::parse(in);
  for (const char* name : {"tiny_t6_bs64.pt", "tiny_t6_bs64.pt.gz"}) {
    SCOPED_TRACE(name);
    DlrmImport got = import_dlrm_dataset(fixtures + name);
    ASSERT_EQ(got.tables.size(), expected["tables"].size());
    EXPECT_EQ(got.summary.batch_size, expected["batch_size"].get<int64_t>());
    EXPECT_EQ(got.summary.total_ids, expected["total_ids"].get<int64_t>());
    for (std::size_t t = 0; t < got.tables.size(); ++t) {
      const nlohmann::json& want = expected["tables"][t];
      EXPECT_EQ(got.tables[t].rows, want["rows"].get<int64_t>()) << "table " << t;
      EXPECT_EQ(got.tables[t].pooling_factor, want["pooling_factor"].get<double>()) << "table " << t;
      for (std::size_t b = 0; b < 17; ++b) {
        // Python printed the shortest repr of the same double division: equal bit for bit.
        EXPECT_EQ((*got.tables[t].reuse_hist)[b], want["reuse_hist"][b].get<double>()) << "table " << t << " bin " << b;
      }
    }
  }
  // LibTorch's loader (PyTorchStreamReader + full unpickler) reads the same tensors.
  std::string bytes = test::read_bytes(fixtures + "tiny_t6_bs64.pt");
  auto loaded = torch::pickle_load(std::vector<char>(bytes.begin(), bytes.end())).toTupleRef().elements();
  Dataset data = test::dataset_from_tensors(loaded[0].toTensor(), loaded[1].toTensor(), loaded[2].toTensor());
  expect_statistics(import_dlrm_dataset(fixtures + "tiny_t6_bs64.pt"), data);
}

TEST(DlrmImport, RejectsAWidthThatIsNotAMultipleOfFour) {
  TempDir dir;
  std::string path = save_dataset(dir, "d.pt", test::random_dataset(1, 4, 6));
  DlrmImportOptions options;
  options.dim = 10;
  EXPECT_THROW(import_dlrm_dataset(path, options), InputError);
}

// --- bad files: every one is an InputError naming the file and the problem ---

void expect_input_error(const std::string& path, const std::string& fragment) {
  try {
    import_dlrm_dataset(path);
    ADD_FAILURE() << "no error for " << path << " (expected '" << fragment << "')";
  } catch (const InputError& e) {
    std::string message = e.what();
    EXPECT_NE(message.find(path), std::string::npos) << message;
    EXPECT_NE(message.find(fragment), std::string::npos) << "expected '" << fragment << "' in: " << message;
  }
}

class BadFiles : public ::testing::Test {
 protected:
  // A valid dataset, and a file of it with some of its tensors replaced.
  std::string save(const std::string& name,
                   const std::function<void(torch::Tensor&, torch::Tensor&, torch::Tensor&)>& edit) {
    torch::Tensor indices = data_.indices_tensor();
    torch::Tensor offsets = data_.offsets_tensor(true);
    torch::Tensor lengths = data_.lengths_tensor();
    edit(indices, offsets, lengths);
    std::string path = dir_.path(name);
    test::save_triple(path, indices, offsets, lengths);
    return path;
  }
  std::string valid_file() {
    return save("valid.pt", [](auto&, auto&, auto&) {});
  }

  TempDir dir_;
  Dataset data_ = test::random_dataset(3, 16, 7);
};

TEST_F(BadFiles, MissingFileOrDirectory) {
  expect_input_error(dir_.path("nope.pt"), "no such file");
  expect_input_error(dir_.path(""), "is a directory");
}

TEST_F(BadFiles, NotAZipArchive) {
  std::string text = dir_.path("text.pt");
  test::write_bytes(text, "indices, offsets, lengths: not a torch file at all\n");
  expect_input_error(text, "not a torch.save file");
  std::string empty = dir_.path("empty.pt");
  test::write_bytes(empty, "");
  expect_input_error(empty, "too short");
  // A bare pickle: what torch.save wrote before PyTorch 1.6.
  std::string legacy = dir_.path("legacy.pt");
  test::write_bytes(
      legacy, std::string("\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19.", 15) + std::string(64, 'x'));
  expect_input_error(legacy, "legacy torch.save format");
}

TEST_F(BadFiles, Truncated) {
  std::string bytes = test::read_bytes(valid_file());
  for (std::size_t keep : {bytes.size() / 2, bytes.size() - 10, std::size_t{100}}) {
    std::string path = dir_.path("cut" + std::to_string(keep) + ".pt");
    test::write_bytes(path, bytes.substr(0, keep));
    expect_input_error(path, "truncated");
  }
}

TEST_F(BadFiles, TruncatedOrCorruptGzip) {
  std::string valid = valid_file();
  test::gzip_file(valid, dir_.path("valid.pt.gz"));
  std::string gz = test::read_bytes(dir_.path("valid.pt.gz"));
  std::string cut = dir_.path("cut.pt.gz");
  test::write_bytes(cut, gz.substr(0, gz.size() / 2));
  expect_input_error(cut, "truncated");
  std::string flipped = gz;
  for (std::size_t i = gz.size() / 3; i < gz.size() / 3 + 16; ++i) flipped[i] = static_cast<char>(~flipped[i]);
  std::string corrupt = dir_.path("corrupt.pt.gz");
  test::write_bytes(corrupt, flipped);
  try {
    import_dlrm_dataset(corrupt);
    ADD_FAILURE() << "corrupt gzip accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(corrupt), std::string::npos) << e.what();
  }
}

// Rewrites a valid archive, changing some records: torch.save's writer with hand-made content.
void rewrite_archive(const std::string& from, const std::string& to,
                     const std::function<bool(const std::string&, std::string&)>& edit) {
  caffe2::serialize::PyTorchStreamReader reader(from);
  caffe2::serialize::PyTorchStreamWriter writer(to);
  for (const std::string& name : reader.getAllRecords()) {
    if (name == "version" || name == ".data/version") continue;  // the writer adds its own
    auto [data, size] = reader.getRecord(name);
    std::string bytes(static_cast<const char*>(data.get()), size);
    if (edit(name, bytes)) writer.writeRecord(name, bytes.data(), bytes.size());
  }
  writer.writeEndOfFile();
}

TEST_F(BadFiles, ArchiveWithoutPickleOrWithAGarbledOne) {
  std::string valid = valid_file();
  std::string no_pickle = dir_.path("no_pickle.pt");
  rewrite_archive(valid, no_pickle, [](const std::string& name, std::string&) { return name != "data.pkl"; });
  expect_input_error(no_pickle, "without data.pkl");
  std::string garbled = dir_.path("garbled.pt");
  rewrite_archive(valid, garbled, [](const std::string& name, std::string& bytes) {
    if (name == "data.pkl") bytes = bytes.substr(0, bytes.size() / 2);
    return true;
  });
  expect_input_error(garbled, "it is not a tuple of tensors saved by torch.save, or is damaged");
}

// The bytes of a string literal, NULs included.
template <std::size_t N>
std::string raw(const char (&text)[N]) {
  return std::string(text, N - 1);
}

// Programs that crash LibTorch 1.13's unpickler (or could make it allocate without bound) are refused
// before it runs them.
TEST_F(BadFiles, PicklesThatWouldCrashLibTorch) {
  const std::string valid = valid_file();
  const std::vector<std::pair<std::string, std::string>> cases = {
      // REDUCE with only the callable on the stack: LibTorch swaps end()-2 with end()-1 (seen as a crash).
      {raw("\x80\x02"
           "ctorch._utils\n_rebuild_tensor_v2\n"
           "q\x00((R."),
       "pops an empty stack"},
      // TUPLE without a mark: LibTorch reads marks_.back() of an empty vector.
      {raw("\x80\x02K\x01t."), "mark that was never set"},
      // LONG_BINPUT 0xffffffff: LibTorch sizes its memo table by the index.
      {raw("\x80\x02)r\xff\xff\xff\xff."), "memo index 4294967295"},
      // BINUNICODE claiming 4 GiB, far more than the pickle holds.
      {raw("\x80\x02X\xff\xff\xff\xff."), "ends inside an argument"},
      {raw("\x80\x02h\x05."), "never set"},
      {raw("\x80\x02"
           "cos\nsystem\n."),
       "refers to os.system"},
      {raw("\x80\x02}."), "opcode 0x7d"},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    std::string path = dir_.path("crafted" + std::to_string(i) + ".pt");
    rewrite_archive(valid, path, [&](const std::string& name, std::string& bytes) {
      if (name == "data.pkl") bytes = cases[i].first;
      return true;
    });
    expect_input_error(path, cases[i].second);
  }
}

TEST_F(BadFiles, RecordShorterThanItsStorage) {
  std::string valid = valid_file();
  std::string path = dir_.path("short_record.pt");
  rewrite_archive(valid, path, [](const std::string& name, std::string& bytes) {
    if (name == "data/0") bytes.resize(bytes.size() - 8);
    return true;
  });
  expect_input_error(path, "the pickle declares");
}

TEST_F(BadFiles, WrongTupleShape) {
  torch::Tensor indices = data_.indices_tensor();
  std::string single = dir_.path("single.pt");
  test::save_like_torch(single, indices);
  expect_input_error(single, "the saved object is a Tensor, expected a tuple");
  std::string pair = dir_.path("pair.pt");
  test::save_like_torch(pair, c10::ivalue::Tuple::create({indices, data_.offsets_tensor(true)}));
  expect_input_error(pair, "has 2 elements, expected 3");
  std::string with_int = dir_.path("with_int.pt");
  test::save_like_torch(with_int, c10::ivalue::Tuple::create({indices, int64_t{5}, data_.lengths_tensor()}));
  expect_input_error(with_int, "element 1 of the saved tuple is a Int");
}

TEST_F(BadFiles, WrongShapesOrDtypes) {
  expect_input_error(save("flat_lengths.pt", [](auto&, auto&, auto& l) { l = l.reshape({-1}); }),
                     "lengths has 1 dimension");
  expect_input_error(save("float_ids.pt", [](auto& i, auto&, auto&) { i = i.to(torch::kFloat); }), "dtype Float");
  expect_input_error(save("2d_ids.pt",
                          [](auto& i, auto&, auto&) {
                            i = i.reshape({1, -1});
                          }),
                     "indices has 2 dimensions");
  expect_input_error(save("no_batch.pt",
                          [](auto&, auto& o, auto& l) {
                            l = torch::zeros({3, 0}, torch::kLong);
                            o = torch::zeros({1}, torch::kLong);
                          }),
                     "batch size 0");
}

// An expanded indices or offsets tensor would let a small file describe unbounded work.
TEST_F(BadFiles, ExpandedIndicesOrOffsets) {
  expect_input_error(
      save("expanded_ids.pt", [](auto& i, auto&, auto&) { i = i.slice(0, 0, 1).clone().expand({i.numel()}); }),
      "indices has 235 elements but stores only 1");
  expect_input_error(save("expanded_offsets.pt",
                          [](auto& i, auto& o, auto& l) {
                            i = i.slice(0, 0, 0);
                            l = torch::zeros_like(l);
                            o = torch::zeros({1}, torch::kLong).expand({o.numel()});
                          }),
                     "offsets has 49 elements but stores only 1");
}

TEST_F(BadFiles, OffsetsThatDisagreeWithLengths) {
  expect_input_error(save("short_offsets.pt", [](auto&, auto& o, auto&) { o = o.slice(0, 0, o.numel() - 5); }),
                     "offsets has");
  expect_input_error(save("shifted.pt", [](auto&, auto& o, auto&) { o[20] += 1; }), "offsets[20] is");
  expect_input_error(save("bad_end.pt", [](auto&, auto& o, auto&) { o[o.numel() - 1] += 3; }), "the last offset");
  expect_input_error(save("extra_ids.pt",
                          [](auto& i, auto&, auto&) {
                            i = torch::cat({i, i.slice(0, 0, 4)});
                          }),
                     "indices has");
  expect_input_error(save("neg_length.pt",
                          [](auto&, auto& o, auto& l) {
                            l[0][1] = -1;
                            o[2] = o[1] - 1;
                          }),
                     "lengths[0][1] is -1: negative");
  expect_input_error(save("past_end.pt",
                          [](auto& i, auto& o, auto& l) {
                            i = i.slice(0, 0, 2);
                            (void)o;
                            (void)l;
                          }),
                     "lengths run past");
}

TEST_F(BadFiles, NegativeIds) {
  // The last id, in the last table that has any (found from the lengths).
  const int64_t pos = static_cast<int64_t>(data_.ids.size()) - 1;
  int64_t table = -1;
  for (int64_t bag = 0, start = 0; bag < data_.tables * data_.batch; ++bag) {
    start += data_.lengths[static_cast<std::size_t>(bag)];
    if (start > pos) {
      table = bag / data_.batch;
      break;
    }
  }
  std::string path = save("negative.pt", [&](auto& i, auto&, auto&) { i[pos] = -42; });
  expect_input_error(path, "indices[" + std::to_string(pos) + "] (table " + std::to_string(table) +
                               ") is -42: ids must not be negative");
}

// Random damage anywhere (zip structures, pickle, tensor data) gives an InputError or, where only ids
// changed, a result; never a crash or another kind of error.
TEST_F(BadFiles, RandomDamageIsAnInputErrorOrHarmless) {
  const std::string valid = test::read_bytes(valid_file());
  std::mt19937_64 rng(99);
  std::string path = dir_.path("damaged.pt");
  int errors = 0;
  for (int round = 0; round < 300; ++round) {
    std::string bytes = valid;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < flips; ++k) bytes[rng() % bytes.size()] = static_cast<char>(rng());
    test::write_bytes(path, bytes);
    try {
      import_dlrm_dataset(path);
    } catch (const InputError&) {
      ++errors;
    }
  }
  EXPECT_GT(errors, 0);
}

// The same for damage to data.pkl alone, in an otherwise valid archive: LibTorch's unpickler must never see
// a program that would make it crash (see include/shardplan/importer/pickle_guard.hpp).
TEST_F(BadFiles, DamagedPickleIsAnInputErrorNeverACrash) {
  const std::string valid = valid_file();
  std::mt19937_64 rng(7);
  std::string path = dir_.path("damaged_pickle.pt");
  for (int round = 0; round < 300; ++round) {
    rewrite_archive(valid, path, [&](const std::string& name, std::string& bytes) {
      if (name != "data.pkl") return true;
      const int edits = 1 + static_cast<int>(rng() % 3);
      for (int k = 0; k < edits; ++k) {
        std::size_t at = rng() % bytes.size();
        switch (rng() % 3) {
          case 0:
            bytes[at] = static_cast<char>(rng());
            break;  // overwrite
          case 1:
            bytes.insert(at, 1, static_cast<char>(rng()));
            break;  // insert
          default:
            bytes.erase(at, 1);
            break;  // delete
        }
      }
      return true;
    });
    try {
      import_dlrm_dataset(path);
    } catch (const InputError&) {
    }
  }
}

}  // namespace
}  // namespace shardplan
