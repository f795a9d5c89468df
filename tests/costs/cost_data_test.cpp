#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "shardplan/core/errors.hpp"
#include "shardplan/cost_model/cost_data.hpp"

namespace shardplan {
namespace {

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("shardplan-costdata-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  return dir;
}

nlohmann::json meta(int batch) { return {{"kind", "comm"}, {"config", {{"batch_size", batch}}}, {"host", "h"}}; }

CommSample sample(double fw) {
  CommSample s;
  s.world_size = 2;
  s.dim_sums = {64, 128};
  s.delays_ms = {0.0, 1.5};
  s.fw_ms = {fw, fw + 1};
  s.bw_ms = {0.5, 0.25};
  return s;
}

TEST(CostData, WritesResumesAndReadsBack) {
  fs::path dir = fresh_dir("resume");
  {
    CostDataWriter writer(dir.string(), meta(1024));
    EXPECT_EQ(writer.existing_samples(), 0);
    writer.append(comm_sample_to_json(sample(1.0)));
    writer.append(comm_sample_to_json(sample(2.0)));
  }
  {
    CostDataWriter writer(dir.string(), meta(1024));
    EXPECT_EQ(writer.existing_samples(), 2);
    writer.append(comm_sample_to_json(sample(3.0)));
  }
  CostData data = load_cost_data(dir.string(), CostKind::kComm);
  ASSERT_EQ(data.comm.size(), 3u);
  EXPECT_DOUBLE_EQ(data.comm[2].fw_ms[1], 4.0);
  EXPECT_EQ(data.comm[0].dim_sums, (std::vector<int64_t>{64, 128}));
  EXPECT_EQ(data.meta["format"], kCostDataFormat);
  fs::remove_all(dir);
}

TEST(CostData, ResumeCutsATornLastLine) {
  fs::path dir = fresh_dir("torn");
  {
    CostDataWriter writer(dir.string(), meta(1024));
    writer.append(comm_sample_to_json(sample(1.0)));
  }
  {
    std::ofstream out(dir / kCostSamplesFile, std::ios::app);
    out << R"({"world_size": 2, "dim_sums": [64)";  // an interrupted write
  }
  {
    CostDataWriter writer(dir.string(), meta(1024));
    EXPECT_EQ(writer.existing_samples(), 1);
    writer.append(comm_sample_to_json(sample(2.0)));
  }
  EXPECT_EQ(load_cost_data(dir.string(), CostKind::kComm).comm.size(), 2u);
  fs::remove_all(dir);
}

TEST(CostData, RefusesToAppendADifferentCollection) {
  fs::path dir = fresh_dir("mismatch");
  { CostDataWriter writer(dir.string(), meta(1024)); }
  EXPECT_THROW(CostDataWriter(dir.string(), meta(2048)), InputError);
  fs::remove_all(dir);
}

TEST(CostData, LoadsEveryDirectoryOfTheKindBelowARoot) {
  fs::path root = fresh_dir("tree");
  for (const char* w : {"w2", "w4"}) {
    CostDataWriter writer((root / "comm" / w).string(), meta(1024));
    writer.append(comm_sample_to_json(sample(1.0)));
  }
  EXPECT_EQ(load_cost_data(root.string(), CostKind::kComm).comm.size(), 2u);
  EXPECT_THROW(load_cost_data(root.string(), CostKind::kCompute), InputError);
  fs::remove_all(root);
}

// A timed plan's reduce-scatter width and all-reduce ride along; samples without them keep the old form.
TEST(CostData, PlanCollectivesRoundTrip) {
  CommSample plain = sample(1.0);
  EXPECT_FALSE(comm_sample_to_json(plain).contains("rw_dim"));
  EXPECT_FALSE(comm_sample_to_json(plain).contains("allreduce_ms"));
  CommSample timed = sample(1.0);
  timed.rw_dim = 48;
  timed.allreduce_floats = 1000;
  timed.allreduce_ms = {0.75, 0.5};
  CommSample back = comm_sample_from_json(comm_sample_to_json(timed), "x");
  EXPECT_EQ(back.rw_dim, 48);
  EXPECT_EQ(back.allreduce_floats, 1000);
  EXPECT_EQ(back.allreduce_ms, (std::vector<double>{0.75, 0.5}));
  EXPECT_EQ(model_dim_sums(back), (std::vector<int64_t>{112, 176}));
  nlohmann::json missing = comm_sample_to_json(timed);
  missing.erase("allreduce_ms");
  try {
    comm_sample_from_json(missing, "f:3");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("allreduce_ms"), std::string::npos) << e.what();
  }
}

TEST(CostData, MalformedLinesNameTheFileAndLine) {
  fs::path dir = fresh_dir("bad");
  {
    CostDataWriter writer(dir.string(), meta(1024));
    writer.append(comm_sample_to_json(sample(1.0)));
  }
  {
    std::ofstream out(dir / kCostSamplesFile, std::ios::app);
    out << R"({"world_size": 2, "dim_sums": [64], "delays_ms": [0, 0], "fw_ms": [1, 1], "bw_ms": [1, 1]})"
        << "\n";
  }
  try {
    load_cost_data(dir.string(), CostKind::kComm);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("samples.jsonl:2: dim_sums: must have 2 entries"), std::string::npos)
        << e.what();
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace shardplan
