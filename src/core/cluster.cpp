#include "shardplan/core/cluster.hpp"

#include <fmt/format.h>

#include <cmath>

#include "shardplan/core/errors.hpp"

namespace shardplan {

std::string_view optimizer_name(Optimizer optimizer) {
  switch (optimizer) {
    case Optimizer::kSgd:
      return "sgd";
    case Optimizer::kRowwiseAdagrad:
      return "rowwise_adagrad";
    case Optimizer::kAdagrad:
      return "adagrad";
    case Optimizer::kAdam:
      return "adam";
  }
  return "sgd";
}

std::optional<Optimizer> parse_optimizer(std::string_view name) {
  for (Optimizer o : {Optimizer::kSgd, Optimizer::kRowwiseAdagrad, Optimizer::kAdagrad, Optimizer::kAdam}) {
    if (optimizer_name(o) == name) return o;
  }
  return std::nullopt;
}

int64_t Cluster::usable_bytes_per_device() const {
  return static_cast<int64_t>(std::floor(static_cast<double>(memory_per_device_bytes) * (1.0 - reserve_fraction)));
}

void validate_cluster(const Cluster& cluster) {
  if (cluster.num_devices < 1 || cluster.num_devices > kMaxDevices) {
    throw SettingError("GPUs", fmt::format("must be between 1 and {}, got {}", kMaxDevices, cluster.num_devices));
  }
  if (cluster.devices_per_host < 1 || cluster.devices_per_host > kMaxDevices) {
    throw SettingError("GPUs per host",
                       fmt::format("must be between 1 and {}, got {}", kMaxDevices, cluster.devices_per_host));
  }
  if (cluster.memory_per_device_bytes < 1) {
    throw SettingError("memory per GPU", fmt::format("must be positive, got {}", cluster.memory_per_device_bytes));
  }
  if (!(cluster.reserve_fraction >= 0.0 && cluster.reserve_fraction < 1.0)) {
    throw SettingError("reserve", fmt::format("must be in [0, 1), got {}", cluster.reserve_fraction));
  }
  if (cluster.ddr_per_host_bytes < 0) {
    throw SettingError("host memory", fmt::format("must not be negative, got {}", cluster.ddr_per_host_bytes));
  }
  const double link = cluster.host_link_gb_per_s;
  if (!(link == 0.0 || (link >= kMinHostLinkGBps && link <= kMaxHostLinkGBps))) {
    throw SettingError("host link bandwidth", fmt::format("must be a number of GB/s in [{:g}, {:g}], got {}",
                                                          kMinHostLinkGBps, kMaxHostLinkGBps, link));
  }
  if (cluster.offers_host_memory() && cluster.host_link_gb_per_s <= 0.0) {
    throw SettingError("host link bandwidth", "must be given with host memory: cache misses cross it");
  }
}

int64_t shard_memory_bytes(int64_t rows, int64_t cols, DType dtype, Optimizer optimizer) {
  constexpr int64_t kStateBytes = 4;  // optimizer state is fp32 whatever the weights' dtype
  int64_t elements = rows * cols;
  int64_t weights = elements * dtype_bytes(dtype);
  switch (optimizer) {
    case Optimizer::kSgd:
      return weights;
    case Optimizer::kRowwiseAdagrad:
      return weights + rows * kStateBytes;
    case Optimizer::kAdagrad:
      return weights + elements * kStateBytes;
    case Optimizer::kAdam:
      return weights + 2 * elements * kStateBytes;
  }
  return weights;
}

}  // namespace shardplan
