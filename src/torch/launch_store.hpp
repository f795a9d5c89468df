#pragma once
// The key-value store of a launched job (torchrun, or any launcher that sets RANK, WORLD_SIZE, MASTER_ADDR
// and MASTER_PORT): rank 0 serves it and hands work to the other ranks through it. Under torchrun the
// launcher's agent already serves MASTER_PORT (TORCHELASTIC_USE_AGENT_STORE), so rank 0 serves the next
// port, MASTER_PORT + 1.
#include <string>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "shardplan/torch/comm_benchmark.hpp"

namespace shardplan {

class LaunchStore {
 public:
  // Throws RuntimeFailure when the store cannot be reached within `timeout_s`.
  LaunchStore(const CommRendezvous& where, const std::string& prefix, double timeout_s);

  void set(const std::string& key, const std::string& value);
  // Waits for the key up to the timeout; RuntimeFailure names the key when it never comes.
  std::string get(const std::string& key);

 private:
  c10::intrusive_ptr<c10d::Store> store_;
  std::string endpoint_;
  double timeout_s_ = 0.0;
};

// The port of rank 0's store: MASTER_PORT, or MASTER_PORT + 1 when the launcher serves MASTER_PORT.
int launch_store_port(const CommRendezvous& where);

// Rank 0's store for this process (rank 0 serves it, the others connect).
c10::intrusive_ptr<c10d::Store> connect_launch_store(const CommRendezvous& where, double timeout_s);

}  // namespace shardplan
