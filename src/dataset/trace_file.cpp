#include "shardplan/dataset/trace_file.hpp"

#include <nlohmann/json.hpp>

#include "shardplan/core/errors.hpp"

namespace shardplan {

namespace {

void append_int64s(std::string& out, const std::vector<int64_t>& values) {
  static_assert(sizeof(int64_t) == 8);
  // Little-endian on every platform this builds for (x86_64, aarch64); the header says so.
  out.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(int64_t));
}

}  // namespace

std::string format_trace_file(const std::vector<Table>& tables, const std::vector<IndexTrace>& traces,
                              int64_t batch_size, uint64_t seed) {
  if (tables.size() != traces.size()) throw RuntimeFailure("format_trace_file: one trace per table is needed");
  nlohmann::ordered_json entries = nlohmann::ordered_json::array();
  std::string body;
  for (std::size_t i = 0; i < tables.size(); ++i) {
    const IndexTrace& trace = traces[i];
    entries.push_back({{"name", tables[i].name},
                       {"rows", tables[i].rows},
                       {"dim", tables[i].dim},
                       {"dtype", tables[i].dtype == DType::kFp16 ? "fp16" : "fp32"},
                       {"lookups", trace.indices.size()},
                       {"indices_at", body.size()},
                       {"offsets_at", body.size() + trace.indices.size() * sizeof(int64_t)}});
    append_int64s(body, trace.indices);
    append_int64s(body, trace.offsets);
  }
  nlohmann::ordered_json header{{"format", "shard-plan-traces/1"},
                                {"batch_size", batch_size},
                                {"seed", seed},
                                {"byte_order", "little"},
                                {"tables", std::move(entries)}};
  return header.dump() + "\n" + body;
}

}  // namespace shardplan
