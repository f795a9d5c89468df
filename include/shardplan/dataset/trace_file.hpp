#pragma once
// The index-trace file other programs read (`shard-plan-traces/1`): one line of JSON naming every
// table's rows, columns, data type and lookups and where its arrays are, then the arrays as
// little-endian int64 (each table's indices, then its batch + 1 bag offsets).
#include <cstdint>
#include <string>
#include <vector>

#include "shardplan/core/table.hpp"
#include "shardplan/dataset/trace.hpp"

namespace shardplan {

// `traces[i]` is one batch of `batch_size` samples into `tables[i]`.
std::string format_trace_file(const std::vector<Table>& tables, const std::vector<IndexTrace>& traces,
                              int64_t batch_size, uint64_t seed);

}  // namespace shardplan
