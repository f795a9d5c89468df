#include "dlrm_files.hpp"

#include <torch/serialize.h>
#include <unistd.h>
#include <zlib.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <stdexcept>

namespace shardplan::test {

void save_like_torch(const std::string& path, const c10::IValue& value) {
  std::vector<char> bytes = torch::pickle_save(value);
  write_bytes(path, std::string(bytes.begin(), bytes.end()));
}

void save_triple(const std::string& path, const torch::Tensor& indices, const torch::Tensor& offsets,
                 const torch::Tensor& lengths) {
  save_like_torch(path, c10::ivalue::Tuple::create({indices, offsets, lengths}));
}

void gzip_file(const std::string& from, const std::string& to) {
  std::string data = read_bytes(from);
  gzFile gz = gzopen(to.c_str(), "wb6");
  if (gz == nullptr) throw std::runtime_error("gzopen failed: " + to);
  if (!data.empty() && gzwrite(gz, data.data(), static_cast<unsigned>(data.size())) != static_cast<int>(data.size())) {
    gzclose(gz);
    throw std::runtime_error("gzwrite failed: " + to);
  }
  if (gzclose(gz) != Z_OK) throw std::runtime_error("gzclose failed: " + to);
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path);
}

torch::Tensor Dataset::indices_tensor() const { return torch::tensor(ids, torch::kLong); }

torch::Tensor Dataset::offsets_tensor(bool closed) const {
  std::vector<int64_t> offsets{0};
  for (int64_t length : lengths) offsets.push_back(offsets.back() + length);
  if (!closed) offsets.pop_back();
  return torch::tensor(offsets, torch::kLong);
}

torch::Tensor Dataset::lengths_tensor() const { return torch::tensor(lengths, torch::kLong).reshape({tables, batch}); }

Dataset random_dataset(int64_t tables, int64_t batch, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Dataset data;
  data.tables = tables;
  data.batch = batch;
  for (int64_t t = 0; t < tables; ++t) {
    // Per table: a hash size from 10 to 1e6, a mean bag length from 0 to 8 (some tables are never looked
    // up), and log-uniform ids, so a few ids are hit thousands of times and most only once.
    const double log_hash = std::uniform_real_distribution<double>(std::log(10.0), std::log(1e6))(rng);
    const double mean_length = t % 7 == 3 ? 0.0 : std::uniform_real_distribution<double>(0.5, 8.0)(rng);
    std::poisson_distribution<int64_t> length_dist(mean_length);
    std::uniform_real_distribution<double> id_dist(0.0, log_hash);
    for (int64_t b = 0; b < batch; ++b) {
      int64_t length = mean_length > 0 ? length_dist(rng) : 0;
      data.lengths.push_back(length);
      for (int64_t k = 0; k < length; ++k) data.ids.push_back(static_cast<int64_t>(std::exp(id_dist(rng))) - 1);
    }
  }
  return data;
}

Dataset dataset_from_tensors(const torch::Tensor& indices, const torch::Tensor& offsets, const torch::Tensor& lengths) {
  Dataset data;
  data.tables = lengths.size(0);
  data.batch = lengths.size(1);
  torch::Tensor flat_lengths = lengths.to(torch::kLong).contiguous().reshape({-1});
  data.lengths.assign(flat_lengths.data_ptr<int64_t>(), flat_lengths.data_ptr<int64_t>() + flat_lengths.numel());
  torch::Tensor ids = indices.to(torch::kLong).contiguous();
  data.ids.assign(ids.data_ptr<int64_t>(), ids.data_ptr<int64_t>() + ids.numel());
  // The loaders under test derive bags from offsets; here they come from lengths, so check the two agree.
  torch::Tensor offs = offsets.to(torch::kLong).contiguous();
  int64_t pos = 0;
  for (int64_t i = 0; i < static_cast<int64_t>(data.lengths.size()); ++i) {
    if (offs.data_ptr<int64_t>()[i] != pos) throw std::runtime_error("offsets disagree with lengths");
    pos += data.lengths[static_cast<std::size_t>(i)];
  }
  return data;
}

std::vector<ExpectedTable> expected_statistics(const Dataset& data) {
  std::vector<ExpectedTable> out;
  std::size_t next_id = 0;
  for (int64_t t = 0; t < data.tables; ++t) {
    std::map<int64_t, int64_t> counts;
    int64_t lookups = 0;
    for (int64_t b = 0; b < data.batch; ++b) {
      int64_t length = data.lengths[static_cast<std::size_t>(t * data.batch + b)];
      for (int64_t k = 0; k < length; ++k) counts[data.ids[next_id++]] += 1;
      lookups += length;
    }
    ExpectedTable table;
    table.rows = counts.empty() ? 100 : std::max<int64_t>(counts.rbegin()->first + 1, 100);
    table.pooling_factor = static_cast<double>(lookups) / static_cast<double>(data.batch);
    std::array<int64_t, 17> bins{};
    for (const auto& [id, count] : counts) {
      int bin = 0;
      for (int64_t upper = 1; count > upper && bin < 16; upper *= 2) ++bin;
      bins[static_cast<std::size_t>(bin)] += 1;
    }
    for (std::size_t b = 0; b < 17 && !counts.empty(); ++b) {
      table.hist[b] = static_cast<double>(bins[b]) / static_cast<double>(counts.size());
    }
    out.push_back(table);
  }
  return out;
}

}  // namespace shardplan::test
