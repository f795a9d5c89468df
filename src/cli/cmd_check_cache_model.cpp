// shard-plan check-cache-model --tables data/pool.json: the cache model's predicted LRU miss rate against
// a simulation of FBGEMM's cache on multi-batch traces that follow the model's persistence assumption
// (docs/cost-models.md, "UVM caching: the miss rate").
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "cli_common.hpp"
#include "commands.hpp"
#include "shardplan/core/errors.hpp"
#include "shardplan/core/random.hpp"
#include "shardplan/core/tables_io.hpp"
#include "shardplan/cost_model/cache_model.hpp"
#include "shardplan/costs/cache_simulation.hpp"
#include "shardplan/dataset/trace.hpp"

namespace shardplan::cli {

namespace {

constexpr int64_t kMaxBatch = 1 << 24;
// The check means something only where the cache can hold a batch twice over well inside the table.
constexpr double kMaxTwiceDistinctShare = 0.1;
constexpr uint64_t kSelectionStream = 0x73656c656374ull;  // "select"
// After the warm-up's length in the text: how it ended (WarmupEnd's order).
constexpr const char* kWarmupMarks[] = {"", " f", " cut"};

struct CheckFlags {
  std::string tables_path;
  int count = 20;
  uint64_t seed = 1;
  int64_t batch_size = 65536;
  std::vector<double> load_factors = {0.05, 0.1, 0.2, 0.5};
  std::vector<double> persistence = {1.0, 0.5, 0.0};
  int64_t batches = 0;
  int64_t warmup_rows = CacheCheckOptions{}.warmup_row_budget;
  bool json = false;
  LogOptions log_options;
};

void check_flags(const CheckFlags& f) {
  if (f.count < 1) throw InputError(fmt::format("--count: must be 1 or more tables, got {}", f.count));
  if (f.batch_size < 1 || f.batch_size > kMaxBatch) {
    throw InputError(fmt::format("--batch-size: must be 1 to {}, got {}", kMaxBatch, f.batch_size));
  }
  if (f.load_factors.empty()) throw InputError("--load-factors: names no load factor");
  for (double clf : f.load_factors) {
    if (!(clf > 0.0 && clf < 1.0)) throw InputError(fmt::format("--load-factors: must be in (0, 1), got {}", clf));
  }
  if (f.persistence.empty()) throw InputError("--persistence: names no value");
  for (double sigma : f.persistence) {
    if (!(sigma >= 0.0 && sigma <= 1.0))
      throw InputError(fmt::format("--persistence: must be in [0, 1], got {}", sigma));
  }
  if (f.batches < 0) throw InputError(fmt::format("--batches: must be 0 (automatic) or more, got {}", f.batches));
  if (f.warmup_rows < 1) throw InputError(fmt::format("--warmup-rows: must be 1 or more, got {}", f.warmup_rows));
}

struct Candidate {
  std::size_t index = 0;  // in the tables file
  int64_t distinct = 0;
};

// `count` tables drawn with the seed among those with 2D/R <= 0.1 at the batch, in file order.
std::vector<Candidate> select_tables(const std::vector<Table>& tables, const CheckFlags& f, std::size_t* eligible) {
  std::vector<Candidate> candidates;
  for (std::size_t i = 0; i < tables.size(); ++i) {
    const int64_t distinct = trace_bin_plan(tables[i], f.batch_size).distinct;
    if (distinct >= 1 &&
        2.0 * static_cast<double>(distinct) <= kMaxTwiceDistinctShare * static_cast<double>(tables[i].rows)) {
      candidates.push_back(Candidate{i, distinct});
    }
  }
  *eligible = candidates.size();
  if (candidates.empty()) {
    throw InputError(fmt::format("--tables: no table of {} touches at most {:g} of its rows twice over at batch {}",
                                 f.tables_path, kMaxTwiceDistinctShare, f.batch_size));
  }
  Rng rng(derive_seed(f.seed, kSelectionStream));
  const std::size_t take = std::min(candidates.size(), static_cast<std::size_t>(f.count));
  for (std::size_t i = 0; i < take; ++i) {
    auto j = i + static_cast<std::size_t>(rng.below(static_cast<uint64_t>(candidates.size() - i)));
    std::swap(candidates[i], candidates[j]);
  }
  candidates.resize(take);
  std::sort(candidates.begin(), candidates.end(),
            [](const Candidate& a, const Candidate& b) { return a.index < b.index; });
  return candidates;
}

nlohmann::json finite_or_null(double value) { return std::isfinite(value) ? nlohmann::json(value) : nlohmann::json(); }

std::string persistence_key(double sigma) { return fmt::format("{:g}", sigma); }

int run_check_cache_model(int argc, char** argv) {
  CLI::App app{
      "Checks the cache model's LRU miss rate (fused_uvm_caching) against a simulation of FBGEMM's cache: picks "
      "tables with a fixed seed among those whose batch touches at most 5% of their rows (2D/R <= 0.1), draws "
      "a sequence of batches per table whose popular rows persist as the model assumes (sigma: the share "
      "that does), runs FBGEMM's 32-way batch-clocked LRU on it at each load factor from the table's least "
      "(C >= 2D) on, and prints predicted and simulated unique miss rate m_u and conflict share K/D, and the "
      "largest difference. See docs/cost-models.md, \"UVM caching: the miss rate\".",
      "shard-plan check-cache-model"};
  app.footer(R"(Example:
  shard-plan check-cache-model --tables data/pool.json --count 20 --seed 1 --batch-size 65536

Big tables are simulated at 1/k of their rows and lookups (k = D / 2000, rounded down, at least 1), which
keeps the rates the model predicts. Exit codes: 0 success (whatever the difference), 2 bad usage or input.)");
  configure_app(app);
  CheckFlags f;
  app.add_option("--tables", f.tables_path, "Tables file (e.g. data/pool.json)")->required();
  app.add_option("--count", f.count, "Tables to check")->capture_default_str();
  add_seed_option(app, f.seed, "Seed of the table choice and of the traces");
  app.add_option("--batch-size", f.batch_size, "Samples per step (the cost model's batch; h100: 65536)")
      ->capture_default_str();
  app.add_option("--load-factors", f.load_factors, "Comma-separated cache load factors in (0, 1)")
      ->delimiter(',')
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->capture_default_str();
  app.add_option("--persistence", f.persistence,
                 "Comma-separated persistence sigma in [0, 1]: the share of a batch's reused rows that stay popular "
                 "in the next (1: the model's default, 0: independent batches)")
      ->delimiter(',')
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->capture_default_str();
  app.add_option("--batches", f.batches,
                 "Batches measured after the warm-up (0: at least 200 and 20,000 distinct rows in all)")
      ->capture_default_str();
  app.add_option("--warmup-rows", f.warmup_rows,
                 "Rows a cache's warm-up may visit (a batch of fewer than 64 counting as 64) before it stops short of "
                 "3 T_C and a full cache")
      ->capture_default_str();
  app.add_flag("--json", f.json, "Print the results as JSON on stdout");
  add_log_options(app, f.log_options);
  if (auto code = parse_or_exit(app, argc, argv)) return *code;
  apply_log_options(f.log_options);
  check_flags(f);

  const std::vector<Table> tables = load_tables(f.tables_path);
  std::size_t eligible = 0;
  const std::vector<Candidate> chosen = select_tables(tables, f, &eligible);
  if (chosen.size() < static_cast<std::size_t>(f.count)) {
    spdlog::warn("--count: only {} tables qualify, checking them all", chosen.size());
  }
  CacheCheckOptions options;
  options.measured_batches = f.batches;
  options.warmup_row_budget = f.warmup_rows;

  nlohmann::json out_tables = nlohmann::json::array();
  double worst = -1.0;
  std::string worst_where;
  nlohmann::json worst_json;
  std::map<std::string, double> worst_by_sigma;
  // Apart: the caches whose warm-up the row budget cut (their simulated rate may still hold cold misses,
  // so it can only lie above the steady one) and the others.
  double worst_warmed = -1.0;
  double worst_cut = -1.0;
  int cut_runs = 0;
  std::vector<std::string> lines;
  lines.push_back(fmt::format("{:<8} {:>10} {:>6} {:>3} {:>5} {:>5} {:>9} {:>8} {:>8} {:>7} {:>8} {:>8} {:>8}", "table",
                              "rows", "D", "k", "clf", "sigma", "slots", "m_u pred", "m_u sim", "delta", "K/D pred",
                              "K/D sim", "warm-up"));
  const auto started = std::chrono::steady_clock::now();
  for (const Candidate& c : chosen) {
    const Table& table = tables[c.index];
    const double least = min_load_factor(table, f.batch_size);
    std::vector<double> levels;
    for (double clf : f.load_factors) {
      if (clf >= least) levels.push_back(clf);
    }
    const BinPlan plan = trace_bin_plan(table, f.batch_size);
    nlohmann::json entry = {{"name", table.name},       {"index", c.index},
                            {"rows", table.rows},       {"pooling_factor", table.pooling_factor},
                            {"distinct", c.distinct},   {"singletons", plan.rows_per_bin[0]},
                            {"min_load_factor", least}, {"runs", nlohmann::json::array()}};
    if (levels.empty()) {
      lines.push_back(fmt::format("{:<8} {:>10} {:>6}  no load factor at or above its least, {:.4g}", table.name,
                                  table.rows, c.distinct, least));
    }
    for (double sigma : f.persistence) {
      if (levels.empty()) break;
      const auto t0 = std::chrono::steady_clock::now();
      const CacheCheckRun run =
          check_cache_model(table, f.batch_size, levels, sigma, derive_seed(f.seed, c.index), options);
      int64_t warmup_batches = 0;
      for (const CacheCheckLevel& level : run.levels) warmup_batches += level.warmup_batches;
      spdlog::debug("{} sigma {:g}: {} warm-up and {} x {} measured batches of {} rows in {:.2f} s", table.name, sigma,
                    warmup_batches, run.levels.size(), run.measured_batches, run.simulated_distinct,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      entry["scale"] = run.scale;
      entry["simulated_rows"] = run.simulated_rows;
      entry["scale_capped_for_memory"] = run.capped;
      if (run.capped) {
        spdlog::warn(
            "{}: simulated at 1/{} of its {} rows to bound the simulation's memory ({} rows at most); "
            "its simulated batches touch {} rows, fewer than the {} the check aims for, so its rates "
            "are noisier",
            table.name, run.scale, table.rows, options.max_simulated_rows, run.simulated_distinct,
            options.min_scaled_distinct);
      }
      nlohmann::json run_json = {{"persistence", sigma},
                                 {"measured_batches", run.measured_batches},
                                 {"simulated_distinct", run.simulated_distinct},
                                 {"levels", nlohmann::json::array()}};
      for (const CacheCheckLevel& level : run.levels) {
        const double delta_pp = 100.0 * (level.predicted.miss_rate_unique - level.simulated.miss_rate_unique());
        const double predicted_k =
            level.predicted.distinct > 0 ? level.predicted.conflict_unique / level.predicted.distinct : 0.0;
        const std::string key = persistence_key(sigma);
        worst_by_sigma[key] = std::max(worst_by_sigma[key], std::abs(delta_pp));
        double& worst_of_kind = level.warmup_end == WarmupEnd::kBudget ? worst_cut : worst_warmed;
        worst_of_kind = std::max(worst_of_kind, std::abs(delta_pp));
        if (std::abs(delta_pp) > worst) {
          worst = std::abs(delta_pp);
          worst_where = fmt::format("{}, clf {:g}, sigma {:g}", table.name, level.load_factor, sigma);
          worst_json = {{"table", table.name}, {"load_factor", level.load_factor}, {"persistence", sigma}};
        }
        lines.push_back(fmt::format(
            "{:<8} {:>10} {:>6} {:>3} {:>5g} {:>5g} {:>9} {:>7.2f}% {:>7.2f}% {:>+7.2f} {:>7.4f}% {:>7.4f}% {:>7}{}",
            table.name, table.rows, c.distinct, run.scale, level.load_factor, sigma, level.cache_slots,
            100.0 * level.predicted.miss_rate_unique, 100.0 * level.simulated.miss_rate_unique(), delta_pp,
            100.0 * predicted_k, 100.0 * level.simulated.conflict_rate_unique(), level.warmup_batches,
            kWarmupMarks[static_cast<int>(level.warmup_end)]));
        cut_runs += level.warmup_end == WarmupEnd::kBudget ? 1 : 0;
        const LruCacheStats& s = level.simulated;
        run_json["levels"].push_back({{"load_factor", level.load_factor},
                                      {"cache_slots", level.cache_slots},
                                      {"simulated_slots", level.simulated_slots},
                                      {"warmup_batches", level.warmup_batches},
                                      {"warmup_end", warmup_end_name(level.warmup_end)},
                                      {"predicted",
                                       {{"distinct", level.predicted.distinct},
                                        {"miss_rate_unique", level.predicted.miss_rate_unique},
                                        {"conflict_share", predicted_k},
                                        {"miss_rate_lookup", level.predicted.miss_rate_lookup},
                                        {"characteristic_time", finite_or_null(level.predicted.characteristic_time)}}},
                                      {"simulated",
                                       {{"miss_rate_unique", s.miss_rate_unique()},
                                        {"conflict_share", s.conflict_rate_unique()},
                                        {"miss_rate_lookup", s.miss_rate_lookup()},
                                        {"calls", s.calls},
                                        {"requested_indices", s.requested_indices},
                                        {"unique_indices", s.unique_indices},
                                        {"unique_misses", s.unique_misses},
                                        {"conflict_unique_misses", s.conflict_unique_misses},
                                        {"conflict_misses", s.conflict_misses}}},
                                      {"delta_pp", delta_pp}});
      }
      entry["runs"].push_back(run_json);
    }
    out_tables.push_back(entry);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  spdlog::info("checked {} tables ({} of {} qualify) at batch {} in {:.1f} s", chosen.size(), eligible, tables.size(),
               f.batch_size, seconds);
  if (cut_runs > 0) {
    spdlog::warn("{} caches ended their warm-up on the row budget before 3 T_C or a full cache (marked 'cut')",
                 cut_runs);
  }
  auto or_null = [](double value) { return value < 0 ? nlohmann::json() : nlohmann::json(value); };

  if (f.json) {
    nlohmann::json by_sigma = nlohmann::json::object();
    for (const auto& [key, value] : worst_by_sigma) by_sigma[key] = value;
    nlohmann::json doc = {{"tables_file", f.tables_path},
                          {"batch_size", f.batch_size},
                          {"seed", f.seed},
                          {"load_factors", f.load_factors},
                          {"persistence", f.persistence},
                          {"qualifying_tables", eligible},
                          {"tables", out_tables},
                          {"max_abs_delta_pp", or_null(worst)},
                          {"max_abs_delta_pp_by_persistence", by_sigma},
                          {"worst", worst_json},
                          {"max_abs_delta_pp_warmed_up", or_null(worst_warmed)},
                          {"cut_caches", cut_runs},
                          {"max_abs_delta_pp_cut", or_null(worst_cut)}};
    std::cout << doc.dump(2) << "\n";
    return 0;
  }
  if (f.log_options.quiet) return 0;
  fmt::print(
      "check-cache-model: {} of the {} tables of {} with 2D/R <= {:g} at batch {} (seed {}); the cache model's "
      "unique miss rate m_u and conflict share K/D against FBGEMM's LRU simulated\n",
      chosen.size(), eligible, f.tables_path, kMaxTwiceDistinctShare, f.batch_size, f.seed);
  for (const std::string& line : lines) fmt::print("{}\n", line);
  if (worst < 0) {
    fmt::print("no table had a load factor at or above its least\n");
    return 0;
  }
  std::string per_sigma;
  for (double sigma : f.persistence) {
    const std::string key = persistence_key(sigma);
    if (worst_by_sigma.count(key) == 0) continue;
    per_sigma += fmt::format("{}sigma {}: {:.2f}", per_sigma.empty() ? "" : ", ", key, worst_by_sigma[key]);
  }
  fmt::print(
      "warm-up: batches before the measured ones, until 3 T_C and a full cache; f: ended early, a block of "
      "100 batches missing under 0.1% of its rows; cut: ended by the row budget\n");
  fmt::print("largest |m_u predicted - simulated|: {:.2f} percentage points ({}); per sigma: {}\n", worst, worst_where,
             per_sigma);
  if (cut_runs > 0) {
    const std::string warmed = worst_warmed < 0 ? std::string("none warmed up")
                                                : fmt::format("{:.2f} over the caches that warmed up", worst_warmed);
    fmt::print("  {}, {:.2f} over the {} the row budget cut (their simulated rate may still hold cold misses)\n",
               warmed, worst_cut, cut_runs);
  }
  return 0;
}

}  // namespace

SHARDPLAN_REGISTER_COMMAND(check_cache_model, "check-cache-model",
                           "check the cache model's LRU miss rate against a simulation of FBGEMM's cache",
                           run_check_cache_model);

}  // namespace shardplan::cli
