#include "shardplan/report/svg_report.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <optional>

#include "shardplan/core/units.hpp"

namespace shardplan {

namespace {

// Margins and panel heights in px. The right margin holds the max, mean and capacity labels.
constexpr double kLeft = 76;
constexpr double kRight = 104;
constexpr double kHeader = 118;
constexpr double kCostHeight = 300;
constexpr double kGap = 64;  // the cost panel's rank labels and the memory panel's title
constexpr double kMemoryHeight = 160;
constexpr double kFooter = 36;

constexpr const char* kCompute = "#4c72b0";
constexpr const char* kForward = "#dd8452";
constexpr const char* kBackward = "#55a868";
constexpr const char* kCache = "#8172b3";
constexpr const char* kMemory = "#8172b3";
constexpr const char* kAlarm = "#c44e52";  // the max line, the bounding device, memory over capacity
constexpr const char* kMean = "#555555";

std::string xml_escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// A model that returns NaN or infinity must not break the drawing (or put "nan" in a coordinate).
double finite(double v) { return std::isfinite(v) ? v : 0.0; }

// An axis from 0 in steps of 1, 2 or 5 times a power of ten, about `ticks` of them, reaching `value`.
struct Axis {
  double top = 1.0;
  double step = 1.0;
};

Axis nice_axis(double value, int ticks = 5) {
  if (!(value > 0.0)) value = 1.0;
  double raw = value / ticks;
  double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude * (raw <= magnitude ? 1 : raw <= 2 * magnitude ? 2 : raw <= 5 * magnitude ? 5 : 10);
  return {std::ceil(value / step - 1e-9) * step, step};
}

struct Layout {
  std::size_t devices = 1;
  double plot_width = 0;
  double slot = 0;  // horizontal space per device
  double bar = 0;
  int label_every = 1;  // a rank label every this many devices
  double cost_top = kHeader;
  double memory_top = kHeader + kCostHeight + kGap;
  double width() const { return kLeft + plot_width + kRight; }
  double height() const { return memory_top + kMemoryHeight + kFooter; }
  double bar_x(std::size_t rank) const { return kLeft + slot * static_cast<double>(rank) + (slot - bar) / 2; }
  double centre_x(std::size_t rank) const { return kLeft + slot * (static_cast<double>(rank) + 0.5); }
};

Layout layout_for(std::size_t devices) {
  Layout l;
  l.devices = std::max<std::size_t>(devices, 1);
  // 24 px a device within [560, 1600]: 128 devices get 12.5 px slots, and a few devices leave room for
  // the title. Thousands of devices thin to 1 px bars rather than an unboundedly wide image.
  l.plot_width = std::clamp(24.0 * static_cast<double>(l.devices), 560.0, 1600.0);
  l.slot = l.plot_width / static_cast<double>(l.devices);
  l.bar = std::clamp(l.slot * 0.75, 1.0, 40.0);
  // Rank labels need about 36 px each; powers of two keep them on host boundaries.
  while (l.label_every * l.slot < 36.0) l.label_every *= 2;
  return l;
}

using Out = std::back_insert_iterator<std::string>;

void text(Out out, double x, double y, std::string_view anchor, std::string_view attributes, std::string_view body) {
  fmt::format_to(out, "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"{}\" {}>{}</text>\n", x, y, anchor, attributes,
                 xml_escape(body));
}

void hline(Out out, const Layout& l, double y, std::string_view colour, std::string_view dash) {
  fmt::format_to(
      out, "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" stroke-width=\"1.5\"{}/>\n",
      kLeft, y, kLeft + l.plot_width, y, colour, dash.empty() ? "" : fmt::format(" stroke-dasharray=\"{}\"", dash));
}

// Grid lines, tick labels and the axis title of a panel whose y runs from 0 (bottom) to axis.top (top).
void y_axis(Out out, const Layout& l, double top, double height, const Axis& axis, std::string_view suffix,
            std::string_view title) {
  const auto ticks = static_cast<int>(std::lround(axis.top / axis.step));
  for (int i = 0; i <= ticks; ++i) {
    double v = axis.step * i;  // not a running sum, which drifts and prints as 0.30000000000000004
    double y = top + height - v / axis.top * height;
    fmt::format_to(out, "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#e3e3e3\"/>\n", kLeft,
                   y, kLeft + l.plot_width, y);
    text(out, kLeft - 6, y + 4, "end", "font-size=\"11\"", fmt::format("{:g}{}", v, suffix));
  }
  fmt::format_to(out, "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#333\"/>\n", kLeft,
                 top, top + height);
  fmt::format_to(out, "<text transform=\"translate(18 {:.1f}) rotate(-90)\" text-anchor=\"middle\">{}</text>\n",
                 top + height / 2, xml_escape(title));
}

// Rank labels below a panel, and faint lines between hosts (when there are few enough to tell apart).
void x_axis(Out out, const Layout& l, const Cluster& cluster, double top, double height) {
  std::size_t per_host = static_cast<std::size_t>(std::max(cluster.devices_per_host, 1));
  if (per_host > 1 && per_host < l.devices && l.devices / per_host <= 64) {
    for (std::size_t r = per_host; r < l.devices; r += per_host) {
      double x = kLeft + l.slot * static_cast<double>(r);
      fmt::format_to(out, "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#cccccc\"/>\n", x,
                     top, top + height);
    }
  }
  double bottom = top + height;
  fmt::format_to(out, "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"#333\"/>\n", kLeft,
                 bottom, kLeft + l.plot_width);
  text(out, kLeft - 6, bottom + 15, "end", "font-size=\"11\"", "rank");
  for (std::size_t r = 0; r < l.devices; r += static_cast<std::size_t>(l.label_every)) {
    text(out, l.centre_x(r), bottom + 15, "middle", "font-size=\"11\"", std::to_string(r));
  }
}

void rect(Out out, double x, double y, double w, double h, std::string_view colour) {
  fmt::format_to(out, "<rect x=\"{:.2f}\" y=\"{:.2f}\" width=\"{:.2f}\" height=\"{:.2f}\" fill=\"{}\"/>", x, y, w,
                 std::max(h, 0.0), colour);
}

struct LegendItem {
  const char* colour;
  std::string label;
  bool dashed_line = false;  // a line (max, mean) rather than a bar colour
};

void legend(Out out, double x, double y, const std::vector<LegendItem>& items) {
  for (const auto& item : items) {
    if (item.dashed_line) {
      fmt::format_to(out,
                     "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" stroke-width=\"2\" "
                     "stroke-dasharray=\"5 3\"/>\n",
                     x, y - 4, x + 16, y - 4, item.colour);
    } else {
      rect(out, x, y - 10, 16, 10, item.colour);
    }
    text(out, x + 21, y, "start", "", item.label);
    x += 21 + 6.6 * static_cast<double>(item.label.size()) + 16;  // DejaVu Sans at 12 px: about 6.6 px a character
  }
}

// The plan's predicted costs at a glance, when it has one per device; non-finite totals count as 0 so
// that the chart's axes stay drawable.
std::optional<CostSummary> chart_costs(const Plan& plan) {
  if (!plan.device_costs || plan.device_costs->empty() ||
      plan.device_costs->size() != static_cast<std::size_t>(plan.cluster.num_devices)) {
    return std::nullopt;
  }
  CostSummary summary = summarise_costs(*plan.device_costs);
  summary.max_ms = finite(summary.max_ms);
  summary.mean_ms = finite(summary.mean_ms);
  return summary;
}

void header(Out out, const Plan& plan, const std::optional<CostSummary>& costs, const PlanAnalysis& analysis,
            const Layout& l) {
  const Cluster& c = plan.cluster;
  std::string title = fmt::format("{} on {} GPUs ({} per host)", plan.algorithm, c.num_devices, c.devices_per_host);
  if (!plan.cost_model.empty()) title += ", cost model " + plan.cost_model;
  text(out, kLeft, 26, "start", "font-size=\"16\" font-weight=\"bold\"", title);
  text(out, kLeft, 46, "start", "font-size=\"13\"",
       costs ? format_cost_summary(*costs) : "costs were not predicted (no cost model was used)");
  double y = 64;
  if (analysis.bound && !analysis.bound->drivers.empty()) {
    std::vector<std::string> names;
    for (const auto& d : analysis.bound->drivers) names.push_back(d.table);
    text(out, kLeft, y, "start", "",
         fmt::format("rank {} bounds the step; its largest cost drivers: {}", analysis.bound->rank,
                     fmt::join(names, ", ")));
    y += 17;
  }
  const BaselineOutcome* best = best_baseline(analysis.baselines);
  if (best && costs) {
    text(out, kLeft, y, "start", "",
         fmt::format("best baseline {}: max {:.3f} ms; this plan {:.3f} ms ({})", best->planner,
                     finite(*best->max_total_ms), costs->max_ms, format_change(*best->max_total_ms, costs->max_ms)));
  }
  std::vector<LegendItem> items{
      {kCompute, "compute"}, {kForward, "forward all-to-all"}, {kBackward, "backward all-to-all"}};
  if (has_cached_tables(plan)) items.push_back({kCache, "host-memory cache misses"});
  items.push_back({kAlarm, "max", true});
  items.push_back({kMean, "mean", true});
  legend(out, kLeft, l.cost_top - 12, items);
}

// The dashed max and mean lines, labelled in the right margin: max above its line, mean below its own,
// so the labels stay apart however close the lines are.
void max_and_mean(Out out, const Layout& l, const CostSummary& costs, const Axis& axis) {
  auto y_of = [&](double v) { return l.cost_top + kCostHeight - v / axis.top * kCostHeight; };
  hline(out, l, y_of(costs.max_ms), kAlarm, "6 3");
  hline(out, l, y_of(costs.mean_ms), kMean, "6 3");
  double label_x = kLeft + l.plot_width + 6;
  text(out, label_x, y_of(costs.max_ms) - 4, "start", fmt::format("fill=\"{}\"", kAlarm),
       fmt::format("max {:.4g} ms", costs.max_ms));
  text(out, label_x, y_of(costs.mean_ms) + 13, "start", fmt::format("fill=\"{}\"", kMean),
       fmt::format("mean {:.4g} ms", costs.mean_ms));
}

}  // namespace

std::string render_svg_report(const Plan& plan, const PlanAnalysis& analysis) {
  const Layout l = layout_for(static_cast<std::size_t>(plan.cluster.num_devices));
  const std::vector<DeviceUsage> usage = device_usage(plan);
  const std::optional<CostSummary> costs = chart_costs(plan);
  const double usable = static_cast<double>(std::max<int64_t>(plan.cluster.usable_bytes_per_device(), 1));

  std::string svg;
  Out out(svg);
  fmt::format_to(out,
                 "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0:.0f}\" height=\"{1:.0f}\" viewBox=\"0 0 {0:.0f} "
                 "{1:.0f}\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"12\">\n",
                 l.width(), l.height());
  fmt::format_to(out, "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
  header(out, plan, costs, analysis, l);

  // Cost panel.
  Axis cost_axis;
  if (costs) {
    cost_axis = nice_axis(costs->max_ms * 1.05);  // headroom for the bounding device's marker
    y_axis(out, l, l.cost_top, kCostHeight, cost_axis, "", "predicted ms per step");
  } else {
    text(out, kLeft + l.plot_width / 2, l.cost_top + kCostHeight / 2, "middle", "font-size=\"14\" fill=\"#555\"",
         "costs were not predicted (no cost model was used)");
  }
  x_axis(out, l, plan.cluster, l.cost_top, kCostHeight);

  // Memory panel.
  double max_share = 0.0;
  for (const auto& u : usage) max_share = std::max(max_share, 100.0 * static_cast<double>(u.memory_bytes) / usable);
  Axis memory_axis = nice_axis(std::max(100.0, max_share), 4);
  y_axis(out, l, l.memory_top, kMemoryHeight, memory_axis, "%", "memory, % of usable");
  auto heaviest = std::max_element(usage.begin(), usage.end(), [](const DeviceUsage& a, const DeviceUsage& b) {
    return a.memory_bytes < b.memory_bytes;
  });
  text(out, kLeft, l.memory_top - 12, "start", "",
       usage.empty() ? std::string("memory per device")
                     : fmt::format("memory per device against usable capacity: max {} ({:.1f}%) on rank {}",
                                   format_bytes(heaviest->memory_bytes), max_share, heaviest - usage.begin()));
  x_axis(out, l, plan.cluster, l.memory_top, kMemoryHeight);

  // One group per device: its cost stack, its memory bar, and a tooltip with the numbers.
  for (std::size_t r = 0; r < usage.size(); ++r) {
    double share = 100.0 * static_cast<double>(usage[r].memory_bytes) / usable;
    std::string tip = fmt::format("rank {}: memory {} ({:.1f}% of usable), {} shards, width {}", r,
                                  format_bytes(usage[r].memory_bytes), share, usage[r].num_shards, usage[r].dim_sum);
    fmt::format_to(out, "<g class=\"device\" data-rank=\"{}\">", r);
    double x = l.bar_x(r);
    if (costs) {
      const DeviceCost& c = (*plan.device_costs)[r];
      tip += fmt::format("; predicted {:.3f} ms = compute {:.3f} + forward {:.3f} + backward {:.3f}",
                         finite(c.total_ms()), finite(c.compute_ms), finite(c.fw_comm_ms), finite(c.bw_comm_ms));
      if (c.cache_ms > 0.0) tip += fmt::format(" + cache misses {:.3f}", finite(c.cache_ms));
      double y = l.cost_top + kCostHeight;
      std::vector<std::pair<double, const char*>> stack{
          {c.compute_ms, kCompute}, {c.fw_comm_ms, kForward}, {c.bw_comm_ms, kBackward}};
      if (c.cache_ms > 0.0) stack.emplace_back(c.cache_ms, kCache);
      for (const auto& [ms, colour] : stack) {
        double h = std::max(finite(ms), 0.0) / cost_axis.top * kCostHeight;
        y -= h;
        rect(out, x, y, l.bar, h, colour);
      }
      if (static_cast<int>(r) == costs->slowest) {
        double cx = l.centre_x(r);
        double w = std::clamp(l.bar, 8.0, 14.0) / 2;
        fmt::format_to(out, "<polygon points=\"{:.1f},{:.1f} {:.1f},{:.1f} {:.1f},{:.1f}\" fill=\"{}\"/>", cx - w,
                       y - 12, cx + w, y - 12, cx, y - 3, kAlarm);
      }
    }
    // At least a pixel for any memory at all, so a nearly empty device is told apart from an empty one.
    double h = usage[r].memory_bytes > 0 ? std::max(share / memory_axis.top * kMemoryHeight, 1.0) : 0.0;
    rect(out, x, l.memory_top + kMemoryHeight - h, l.bar, h, share > 100.0 ? kAlarm : kMemory);
    fmt::format_to(out, "<title>{}</title></g>\n", xml_escape(tip));
  }

  if (costs) max_and_mean(out, l, *costs, cost_axis);
  double capacity_y = l.memory_top + kMemoryHeight - 100.0 / memory_axis.top * kMemoryHeight;
  hline(out, l, capacity_y, "#222222", "");
  text(out, kLeft + l.plot_width + 6, capacity_y - 4, "start", "", "usable");
  text(out, kLeft + l.plot_width + 6, capacity_y + 13, "start", "",
       format_bytes(plan.cluster.usable_bytes_per_device()));
  svg += "</svg>\n";
  return svg;
}

}  // namespace shardplan
