#pragma once
// `shard-plan collect-costs compute|comm`: each mode parses its own flags (argv[0] is the mode).
namespace shardplan::cli {

int run_collect_compute(int argc, char** argv);
int run_collect_comm(int argc, char** argv);

}  // namespace shardplan::cli
