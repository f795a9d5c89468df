#include "launch_store.hpp"

#include <fmt/format.h>

#include <chrono>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "c10d_job.hpp"
#include "shardplan/core/errors.hpp"

namespace shardplan {

namespace {

std::chrono::milliseconds milliseconds(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000.0));
}

}  // namespace

int launch_store_port(const CommRendezvous& where) {
  if (!where.launcher_serves_store) return where.master_port;
  if (where.master_port >= 65535) {
    throw InputError(
        fmt::format("MASTER_PORT {}: shard-plan's store takes the next port under torchrun; pick a "
                    "lower one",
                    where.master_port));
  }
  return where.master_port + 1;
}

c10::intrusive_ptr<c10d::Store> connect_launch_store(const CommRendezvous& where, double timeout_s) {
  c10d::TCPStoreOptions options;
  // torchrun's agent serves MASTER_PORT with the store protocol of its own torch, which need not be this
  // LibTorch's (a 1.13 client hangs on a 2.x agent's store): rank 0 serves shard-plan's on the next port.
  options.port = static_cast<std::uint16_t>(launch_store_port(where));
  options.isServer = where.rank == 0;
  options.numWorkers = static_cast<std::size_t>(where.world_size);
  options.waitWorkers = false;
  options.timeout = milliseconds(timeout_s);
  return c10::make_intrusive<c10d::TCPStore>(where.master_addr, options);
}

LaunchStore::LaunchStore(const CommRendezvous& where, const std::string& prefix, double timeout_s)
    : endpoint_(fmt::format("{}:{}", where.master_addr, launch_store_port(where))), timeout_s_(timeout_s) {
  try {
    store_ = c10::make_intrusive<c10d::PrefixStore>(prefix, connect_launch_store(where, timeout_s));
  } catch (const std::exception& e) {
    throw RuntimeFailure(fmt::format("rank {}: the job's store at {} (served by rank 0) could not be reached: {}",
                                     where.rank, endpoint_, collector::message_of(e)));
  }
}

void LaunchStore::set(const std::string& key, const std::string& value) {
  store_->set(key, std::vector<uint8_t>(value.begin(), value.end()));
}

std::string LaunchStore::get(const std::string& key) {
  try {
    std::vector<uint8_t> bytes = store_->get(key);
    return std::string(bytes.begin(), bytes.end());
  } catch (const std::exception& e) {
    throw RuntimeFailure(fmt::format("waited {} s for '{}' in the job's store at {} (did rank 0 stop?): {}", timeout_s_,
                                     key, endpoint_, collector::message_of(e)));
  }
}

}  // namespace shardplan
