#pragma once
namespace shardplan {
inline constexpr const char* kVersion = "0.1.0";
}  // namespace shardplan
