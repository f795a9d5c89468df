#pragma once
// A task set after a seeded drift (issue 61): the same tasks with their pooling factors scaled, some tables
// grown, some retired and some added from the pool, to benchmark replanning from the old tasks' plans.
// Surviving tables keep their names; added ones take pool names the task lacks. Choices: docs/dataset.md.
#include <cstdint>
#include <vector>

#include "shardplan/core/table.hpp"
#include "shardplan/dataset/task_set.hpp"

namespace shardplan {

struct DriftConfig {
  // Every table's pooling factor is multiplied by exp(N(0, sigma)), a log-normal factor of median 1;
  // in [0, 3] ("pooling drift").
  double pooling_sigma = 0.3;
  // round(fraction x tables) of a task's surviving tables get rows x U[grow_min, grow_max]; in [0, 1)
  // ("grown fraction"), with 1 <= grow_min <= grow_max ("least growth", "most growth").
  double grow_fraction = 0.1;
  double grow_min = 1.25;
  double grow_max = 2.0;
  // round(fraction x tables) pool tables whose names the task lacks are added, each at a uniform width from
  // {4, 8, ..., max_width} as the paper protocol draws them; in [0, 1) ("added fraction", "largest width").
  double add_fraction = 0.1;
  int max_width = 128;
  // round(fraction x tables) tables are retired, one table always stays; in [0, 1) ("retired fraction").
  double retire_fraction = 0.1;
  // Each task draws from its own streams of the seed (mixed with the set's name and the task's index), so
  // one task's redraws do not shift another's.
  uint64_t seed = 0;
};

// Totals over the set. A task whose growth and additions cannot fit the cluster in kMaxDriftDraws draws
// keeps its tables' rows and gains none (a fallback); its pooling factors and retirements still drift.
struct TaskDriftStats {
  int64_t retired = 0;
  int64_t grown = 0;
  int64_t added = 0;
  int64_t redraws = 0;  // growth and additions drawn again because the task no longer fitted
  int fallbacks = 0;
};

inline constexpr int kMaxDriftDraws = 100;

// The drifted set: name + "-drift", the same cluster, each task's surviving tables in their old order and
// then the added ones in pool order; other fields (histograms, dtype, constraints) kept. A task fits as
// generate_task_set's draws do: weights within the cluster's memory, no table over one device. Throws
// SettingError naming a setting out of its range, and InputError for a task without tables or one that
// does not fit even without growth or additions.
TaskSet drift_task_set(const TaskSet& set, const std::vector<Table>& pool, const DriftConfig& config,
                       TaskDriftStats* stats = nullptr);

}  // namespace shardplan
