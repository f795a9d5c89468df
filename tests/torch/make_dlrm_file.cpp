// Writes a large synthetic file in the dlrm_datasets format, for measuring the importer's time and memory
// at the real file's scale (not run by ctest; build target shardplan_make_dlrm_file):
//
//   shardplan_make_dlrm_file OUT.pt TABLES BATCH TOTAL_IDS [SEED]
//   /usr/bin/time -v shard-plan import-dlrm-dataset OUT.pt -o tables.json
//
// fbgemm_t856_bs65536 is TABLES=856 BATCH=65536 with about 450M ids. Per table the pooling factor is
// log-normal around TOTAL_IDS / (TABLES * BATCH) and the ids are log-uniform over a hash size between 1e3 and
// 1e8, so a few rows are hit very often and most once, as in the real data. The archive is written as
// torch::pickle_save / torch.save write it (pickle + PyTorchStreamWriter), but straight to the file, so
// generating needs memory for the tensors only.
#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/serialization/export.h>
#include <torch/csrc/jit/serialization/pickler.h>
#include <torch/types.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <string>

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s OUT.pt TABLES BATCH TOTAL_IDS [SEED]\n", argv[0]);
    return 2;
  }
  const std::string out = argv[1];
  const int64_t tables = std::stoll(argv[2]);
  const int64_t batch = std::stoll(argv[3]);
  const int64_t target_ids = std::stoll(argv[4]);
  std::mt19937_64 rng(argc > 5 ? std::stoull(argv[5]) : 1);

  // Pooling factors: log-normal, rescaled so they sum to the target.
  std::vector<double> pooling(static_cast<std::size_t>(tables));
  std::lognormal_distribution<double> pf_dist(0.0, 1.2);
  double sum = 0.0;
  for (double& pf : pooling) sum += (pf = pf_dist(rng));
  for (double& pf : pooling) pf *= static_cast<double>(target_ids) / (sum * static_cast<double>(batch));

  torch::Tensor lengths = torch::empty({tables, batch}, torch::kLong);
  int64_t* len = lengths.data_ptr<int64_t>();
  int64_t total = 0;
  for (int64_t t = 0; t < tables; ++t) {
    std::poisson_distribution<int64_t> bag(pooling[static_cast<std::size_t>(t)]);
    for (int64_t b = 0; b < batch; ++b) total += (len[t * batch + b] = bag(rng));
  }
  torch::Tensor offsets = torch::empty({tables * batch + 1}, torch::kLong);
  int64_t* off = offsets.data_ptr<int64_t>();
  off[0] = 0;
  for (int64_t i = 0; i < tables * batch; ++i) off[i + 1] = off[i] + len[i];

  torch::Tensor indices = torch::empty({total}, torch::kLong);
  int64_t* ids = indices.data_ptr<int64_t>();
  std::uniform_real_distribution<double> log_hash_dist(std::log(1e3), std::log(1e8));
  for (int64_t t = 0; t < tables; ++t) {
    std::uniform_real_distribution<double> u(0.0, log_hash_dist(rng));
    for (int64_t i = off[t * batch]; i < off[(t + 1) * batch]; ++i) ids[i] = static_cast<int64_t>(std::exp(u(rng))) - 1;
  }
  std::fprintf(stderr, "%lld tables, batch %lld, %lld ids\n", static_cast<long long>(tables),
               static_cast<long long>(batch), static_cast<long long>(total));

  std::vector<char> pickle;
  torch::jit::Pickler pickler([&](const char* data, size_t size) { pickle.insert(pickle.end(), data, data + size); });
  pickler.protocol();
  pickler.pushIValue(c10::ivalue::Tuple::create({indices, offsets, lengths}));
  pickler.stop();
  caffe2::serialize::PyTorchStreamWriter writer(out);
  torch::jit::writeArchiveAndTensors("data", pickle.data(), pickle.size(), pickler.tensorData(), writer);
  writer.writeEndOfFile();
  return 0;
}
