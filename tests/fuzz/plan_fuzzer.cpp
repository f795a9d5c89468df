// libFuzzer target: the plan reader and validator (validate, evaluate), then scoring and re-writing the
// plan, against a fixed set of tables the seed corpus's plans were made for.
#include "fuzz_input.hpp"
#include "shardplan/core/errors.hpp"
#include "shardplan/core/json_file.hpp"
#include "shardplan/core/plan_io.hpp"
#include "shardplan/core/plan_reader.hpp"
#include "shardplan/cost_model/cost_model.hpp"
#include "shardplan/report/evaluate.hpp"

namespace {

std::vector<shardplan::Table> fixed_tables() {
  std::vector<shardplan::Table> tables;
  const int64_t rows[] = {1000, 50000, 200, 123457};
  const int dims[] = {16, 32, 8, 64};
  for (int i = 0; i < 4; ++i) {
    shardplan::Table t;
    t.name = "t" + std::to_string(i);
    t.rows = rows[i];
    t.dim = dims[i];
    t.pooling_factor = 1.0 + i;
    tables.push_back(t);
  }
  return tables;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace shardplan;
  static const std::vector<Table> tables = fixed_tables();
  static const auto model = make_analytic_cost_model(AnalyticCostConfig{});
  try {
    Plan plan = plan_from_json(parse_json_text(fuzz::as_text(data, size), "plan.json"), tables, "plan.json");
    if (plan.cluster.num_devices <= 4096) {
      PlanEvaluation evaluation = evaluate_plan(plan, tables, *model);
      format_evaluation(evaluation);
      plan_to_string(plan);
    }
  } catch (const InputError&) {
  }
  return 0;
}
