#include "shardplan/core/table.hpp"

#include <algorithm>

namespace shardplan {

int dtype_bytes(DType dtype) { return dtype == DType::kFp16 ? 2 : 4; }

std::string_view dtype_name(DType dtype) { return dtype == DType::kFp16 ? "fp16" : "fp32"; }

std::optional<DType> parse_dtype(std::string_view name) {
  if (name == "fp32") return DType::kFp32;
  if (name == "fp16") return DType::kFp16;
  return std::nullopt;
}

bool TableConstraints::allows_rank(int rank) const {
  return ranks.empty() || std::binary_search(ranks.begin(), ranks.end(), rank);
}

const ReuseHist& Table::reuse_hist_or_default() const { return reuse_hist ? *reuse_hist : kDlrmAggregateReuseHist; }

}  // namespace shardplan
