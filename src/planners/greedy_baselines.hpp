#pragma once
// The heuristic baselines of method.md: sort tables by a weight, descending, and put each on the
// least-loaded device (by that weight) where its memory fits; and a seeded random placement.
#include <functional>
#include <memory>

#include "shardplan/planners/planner.hpp"

namespace shardplan {

using TableWeight = std::function<double(const Table&, const Cluster&)>;

std::unique_ptr<Planner> make_greedy_baseline(std::string name, TableWeight weight);
std::unique_ptr<Planner> make_random_baseline(uint64_t seed);

}  // namespace shardplan
