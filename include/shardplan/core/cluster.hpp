#pragma once
// The devices a plan targets and how much of each one's memory shards may use.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "shardplan/core/table.hpp"

namespace shardplan {

// Sparse optimizer whose state lives beside the weights on the device.
enum class Optimizer {
  kSgd,             // no state
  kRowwiseAdagrad,  // one fp32 per row
  kAdagrad,         // one fp32 per element
  kAdam,            // two fp32 per element
};

std::string_view optimizer_name(Optimizer optimizer);
std::optional<Optimizer> parse_optimizer(std::string_view name);

inline constexpr int kMaxDevices = 65'536;
inline constexpr int64_t kDefaultMemoryPerDevice = 80ll << 30;  // an 80 GB A100/H100

inline constexpr double kMinHostLinkGBps = 1e-9;
inline constexpr double kMaxHostLinkGBps = 1e9;

struct Cluster {
  int num_devices = 0;
  int devices_per_host = 8;
  int64_t memory_per_device_bytes = kDefaultMemoryPerDevice;
  double reserve_fraction = 0.0;  // kept free on every device for the rest of the model
  Optimizer optimizer = Optimizer::kSgd;
  std::string hardware;  // the --hardware profile's name; empty: none given
  // Host memory (DDR) each host offers to tables kept in UVM with an HBM cache, shared by its devices;
  // 0: none, every table lives in HBM.
  int64_t ddr_per_host_bytes = 0;
  // Each device's link to its host's memory, GB/s each way (what a cache miss crosses); 0: none given,
  // else within [kMinHostLinkGBps, kMaxHostLinkGBps], the range a plan file may carry.
  double host_link_gb_per_s = 0.0;

  // Memory each device offers to embedding shards.
  int64_t usable_bytes_per_device() const;
  int num_hosts() const { return (num_devices + devices_per_host - 1) / devices_per_host; }
  bool offers_host_memory() const { return ddr_per_host_bytes > 0; }
  // Table-row-wise blocks span one whole host each, as TorchRec shards them: with more than one host, all
  // full (on one host table-row-wise is row-wise).
  bool offers_table_row_wise() const { return num_devices > devices_per_host && num_devices % devices_per_host == 0; }
};

// Throws SettingError naming the setting when one is out of range.
void validate_cluster(const Cluster& cluster);

// Device memory of a shard of `rows` x `cols`: weights plus optimizer state.
int64_t shard_memory_bytes(int64_t rows, int64_t cols, DType dtype, Optimizer optimizer);

inline int64_t table_memory_bytes(const Table& table, Optimizer optimizer) {
  return shard_memory_bytes(table.rows, table.dim, table.dtype, optimizer);
}

}  // namespace shardplan
