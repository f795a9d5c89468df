#include "shardplan/costs/provenance.hpp"

#include <unistd.h>

#include <cstdio>
#include <ctime>

namespace shardplan {

std::string utc_now() {
  std::time_t now = std::time(nullptr);
  char buffer[32];
  std::strftime(buffer, sizeof(buffer), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return buffer;
}

std::string host_name() {
  char buffer[256] = {};
  return ::gethostname(buffer, sizeof(buffer) - 1) == 0 ? buffer : "unknown";
}

nlohmann::json load_average() {
  double one_minute = 0.0;
  std::FILE* file = std::fopen("/proc/loadavg", "r");
  if (file == nullptr) return nullptr;
  int read = std::fscanf(file, "%lf", &one_minute);
  std::fclose(file);
  return read == 1 ? nlohmann::json(one_minute) : nlohmann::json(nullptr);
}

}  // namespace shardplan
