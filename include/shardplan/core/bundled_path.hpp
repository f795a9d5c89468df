#pragma once
// Files shipped with shard-plan (the bundled models, data/, the Python package): found beside the
// executable (a build tree in the sources, or an install's share/shard-plan/), then under the configured
// install prefix, then in the source tree the build was configured from.
#include <string>

namespace shardplan {

// A file shipped with shard-plan ("data/pool.json"), found as above; empty when it is not there.
std::string find_bundled_path(const std::string& relative);

}  // namespace shardplan
