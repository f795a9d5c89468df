#include "shardplan/planners/external_planner.hpp"

#include <fmt/format.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "shardplan/core/atomic_file.hpp"
#include "shardplan/core/capacity.hpp"
#include "shardplan/core/errors.hpp"
#include "shardplan/core/json_file.hpp"
#include "shardplan/core/plan_reader.hpp"
#include "shardplan/core/sharding_types.hpp"
#include "shardplan/core/subprocess.hpp"
#include "shardplan/core/tables_io.hpp"

namespace shardplan {

namespace {

class ExternalPlanner final : public Planner {
 public:
  ExternalPlanner(std::string name, ExternalProgram program, std::vector<std::string> arguments,
                  ShardingTypeSet sharding_types, ExternalPlanLimits limit, Deadline deadline)
      : name_(std::move(name)),
        program_(std::move(program)),
        arguments_(std::move(arguments)),
        sharding_types_(sharding_types),
        limit_(std::move(limit)),
        deadline_(std::move(deadline)) {}

  std::string_view name() const override { return name_; }

  Plan plan(const std::vector<Table>& tables, const Cluster& cluster) const override {
    check_table_constraints(tables, cluster.num_devices, sharding_types_);
    check_total_capacity(tables, cluster);
    TemporaryDirectory work("shard-plan-" + name_);
    const std::string tables_path = work.path() + "/tables.json";
    const std::string plan_path = work.path() + "/plan.json";
    write_file_atomically(tables_path, tables_to_json(tables).dump());
    const Deadline deadline =
        Deadline::earlier(deadline_, Deadline::after(limit_.seconds, limit_.start.value_or(Deadline::Clock::now())));
    ProcessResult done =
        run_process(command_line(cluster, tables_path, plan_path), program_.environment, deadline.seconds_left());
    if (done.timed_out) throw DeadlinePassed(fmt::format("{}: the time limit passed before it finished", name_));
    const std::string said = tail_of(done.errors);
    if (done.exit_code == static_cast<int>(ExitCode::kInfeasible))
      throw InfeasibleError(fmt::format("{}: {}", name_, said));
    if (done.exit_code == static_cast<int>(ExitCode::kBadInput)) throw InputError(fmt::format("{}: {}", name_, said));
    if (done.exit_code != 0) {
      throw RuntimeFailure(
          fmt::format("{}: {} exited with {}: {}", name_, program_.command.front(), done.exit_code, said));
    }
    Plan plan = plan_from_program_json(read_json_file(plan_path), tables, plan_path);
    plan.algorithm = name_;
    plan.cluster = cluster;
    return plan;
  }

 private:
  std::vector<std::string> command_line(const Cluster& cluster, const std::string& tables_path,
                                        const std::string& plan_path) const {
    std::vector<std::string> argv = program_.command;
    std::vector<std::string> cluster_args = {"--tables",
                                             tables_path,
                                             "--gpus",
                                             std::to_string(cluster.num_devices),
                                             "--gpus-per-host",
                                             std::to_string(cluster.devices_per_host),
                                             "--mem-per-gpu",
                                             std::to_string(cluster.usable_bytes_per_device()),
                                             "--optimizer",
                                             std::string(optimizer_name(cluster.optimizer)),
                                             "--sharding-types",
                                             sharding_types_string(sharding_types_),
                                             "-o",
                                             plan_path};
    if (limit_.global_batch_size > 0) {
      const int64_t per_rank = std::max<int64_t>(1, limit_.global_batch_size / cluster.num_devices);
      cluster_args.insert(cluster_args.end(), {"--batch-size", std::to_string(per_rank)});
    }
    argv.insert(argv.end(), cluster_args.begin(), cluster_args.end());
    argv.insert(argv.end(), arguments_.begin(), arguments_.end());
    return argv;
  }

  std::string name_;
  ExternalProgram program_;
  std::vector<std::string> arguments_;
  ShardingTypeSet sharding_types_;
  ExternalPlanLimits limit_;
  Deadline deadline_;
};

}  // namespace

std::unique_ptr<Planner> make_external_planner(std::string name, ExternalProgram program,
                                               std::vector<std::string> arguments, ShardingTypeSet sharding_types,
                                               ExternalPlanLimits limit, Deadline deadline) {
  if (program.command.empty()) throw InputError(fmt::format("{}: no program to run", name));
  return std::make_unique<ExternalPlanner>(std::move(name), std::move(program), std::move(arguments), sharding_types,
                                           std::move(limit), std::move(deadline));
}

}  // namespace shardplan
