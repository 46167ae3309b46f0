// The HTML report: one self-contained page (no script, no request of any
// kind: its content security policy forbids both) with the grade and, for
// attention exercises, heatmaps of the learner's weights, the reference's and
// their difference, drawn as inline SVG.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "report/formats.h"

namespace grader {
namespace {

// Text for an element or an attribute value: printable (report.h) and escaped.
std::string escape(const std::string& text) {
  std::string out;
  for (char c : printable(text)) {
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
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

struct Rgb {
  double r, g, b;
};

Rgb mix(Rgb from, Rgb to, double t) {
  t = std::clamp(t, 0.0, 1.0);
  return {from.r + (to.r - from.r) * t, from.g + (to.g - from.g) * t, from.b + (to.b - from.b) * t};
}

std::string hex(Rgb c) {
  auto byte = [](double v) { return static_cast<int>(std::lround(std::clamp(v, 0.0, 255.0))); };
  return fmt::format("#{:02x}{:02x}{:02x}", byte(c.r), byte(c.g), byte(c.b));
}

constexpr Rgb kWhite{255, 255, 255}, kBlue{8, 69, 148}, kRed{165, 15, 21}, kGrey{150, 150, 150};

// A weight in [0, 1]: white to blue (outside it the colour saturates; the number says it).
Rgb weight_colour(double value) { return mix(kWhite, kBlue, value); }
// A difference on a scale symmetric about 0: blue below, white at 0, red above.
Rgb difference_colour(double value, double extent) {
  return value < 0 ? mix(kWhite, kBlue, -value / extent) : mix(kWhite, kRed, value / extent);
}
bool dark(Rgb c) { return 0.299 * c.r + 0.587 * c.g + 0.114 * c.b < 140; }

// Differences below this are rounding, drawn as 0.
constexpr double kNoDifference = 1e-9;

// A value in two decimals; a weight that is not exactly 0 but rounds to it
// keeps its sign ("+0.00"): a masked key must get exactly 0.
std::string cell_text(double value, bool difference) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  if (difference && std::abs(value) <= kNoDifference) return "0.00";
  if (value != 0 && std::abs(value) < 0.005) return value > 0 ? "+0.00" : "-0.00";
  return fmt::format("{:.2f}", value);
}

// One heatmap of a figure: what it shows and how it is coloured.
struct Map {
  std::string caption;
  std::vector<std::vector<double>> values;
  bool difference = false;
  double extent = 1;  // a difference's colour scale: +-extent
};

// A figure's three heatmaps: the learner's weights, the reference's, and their difference.
std::vector<Map> maps_of(const AttentionFigure& figure) {
  std::vector<std::vector<double>> difference = figure.learner;
  double extent = 0;
  for (size_t i = 0; i < difference.size(); ++i) {
    for (size_t j = 0; j < difference[i].size(); ++j) {
      difference[i][j] -= figure.reference[i][j];
      if (std::isfinite(difference[i][j])) extent = std::max(extent, std::abs(difference[i][j]));
    }
  }
  const bool none = extent <= kNoDifference;
  extent = std::max(extent, kNoDifference);
  return {{"your weights", figure.learner, false, 1},
          {"reference weights", figure.reference, false, 1},
          {none ? std::string("yours − reference: no difference")
                : fmt::format("yours − reference (red: yours larger; scale ±{:.3g})", extent),
           difference, true, extent}};
}

struct Svg {
  std::string text;
  int width = 0, height = 0;
};

// One matrix as an SVG heatmap: a row per query, a column per key, each
// cell's value written in it and in its tooltip; masked keys marked.
Svg heatmap_svg(const Map& map, const std::vector<bool>& masked) {
  const auto& values = map.values;
  const auto& caption = map.caption;
  const bool difference = map.difference;
  const double extent = map.extent;
  constexpr int kCell = 46, kLeft = 34, kTop = 30;
  const int rows = static_cast<int>(values.size()), cols = rows ? static_cast<int>(values.front().size()) : 0;
  const int width = kLeft + cols * kCell + 2, height = kTop + rows * kCell + 2;
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "viewBox=\"0 0 {} {}\" role=\"img\" aria-label=\"{}\">",
      width, height, width, height, escape(caption));
  for (int j = 0; j < cols; ++j) {
    const bool hidden = j < static_cast<int>(masked.size()) && masked[j];
    svg += fmt::format("<text x=\"{}\" y=\"{}\" class=\"{}\">k{}{}</text>", kLeft + j * kCell + kCell / 2, kTop - 10,
                       hidden ? "axis masked" : "axis", j, hidden ? "✕" : "");
  }
  for (int i = 0; i < rows; ++i) {
    svg += fmt::format("<text x=\"{}\" y=\"{}\" class=\"axis\">q{}</text>", kLeft / 2, kTop + i * kCell + kCell / 2 + 4,
                       i);
    for (int j = 0; j < cols; ++j) {
      const double v = values[i][j];
      const Rgb colour = std::isnan(v) ? kGrey : difference ? difference_colour(v, extent) : weight_colour(v);
      const int x = kLeft + j * kCell, y = kTop + i * kCell;
      svg += fmt::format(
          "<g><title>query {}, key {}: {}</title><rect class=\"cell\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" "
          "fill=\"{}\" stroke=\"#d0d7de\"/><text x=\"{}\" y=\"{}\" class=\"{}\">{}</text></g>",
          i, j, std::isfinite(v) ? fmt::format("{:.6g}", v) : cell_text(v, difference), x, y, kCell - 2, kCell - 2,
          hex(colour), x + kCell / 2 - 1, y + kCell / 2 + 3, dark(colour) ? "value light" : "value",
          cell_text(v, difference));
    }
  }
  svg += "</svg>";
  return {svg, width, height};
}

std::string heatmap(const Map& map, const std::vector<bool>& masked) {
  return "<figure class=\"map\">" + heatmap_svg(map, masked).text + "<figcaption>" + escape(map.caption) +
         "</figcaption></figure>";
}

std::string figure_section(const AttentionFigure& figure) {
  std::string out = "<section class=\"figure\"><h3>" + escape(figure.title) + "</h3>";
  out += "<p class=\"meta\">Input: " + escape(figure.input) + "<br/>Your weights: " + escape(figure.source) + "</p>";
  if (!figure.note.empty() || figure.learner.empty()) {
    out += "<p class=\"note\">Nothing to draw: " + escape(figure.note) + "</p></section>";
    return out;
  }
  const bool same = figure.max_difference <= 1e-6;
  out += fmt::format("<p class=\"{}\">{}; shown: batch element {}, head {}{}.</p>", same ? "same" : "differs",
                     same ? "Your weights match the reference's"
                          : fmt::format("Largest difference {}", std::isinf(figure.max_difference)
                                                                     ? std::string("not finite (NaN or infinity)")
                                                                     : fmt::format("{:.3g}", figure.max_difference)),
                     figure.batch, figure.head, same ? "" : " (where they differ most)");
  out += "<div class=\"maps\">";
  for (const auto& map : maps_of(figure)) out += heatmap(map, figure.masked_keys);
  out += "</div>";
  bool any_masked = std::find(figure.masked_keys.begin(), figure.masked_keys.end(), true) != figure.masked_keys.end();
  out += std::string("<p class=\"meta\">Rows are queries (q0, q1, ...), columns keys") +
         (any_masked ? "; keys marked ✕ are masked (mask == 0) and must get weight 0" : "") +
         ". Weights are coloured from 0 (white) to 1 (blue).</p>";
  return out + "</section>";
}

std::string pre(const std::string& title, const std::string& text) {
  if (text.empty()) return "";
  return "<h2>" + escape(title) + "</h2><pre>" + escape(text) + "</pre>";
}

// How a heatmap's text looks, in the page and in a standalone image.
constexpr const char* kSvgStyle = R"(
svg text { font: 11px ui-monospace, monospace; text-anchor: middle; fill: #1b1b1b; }
svg text.light { fill: #fff; }
svg text.masked { fill: #b42318; font-weight: bold; }
)";

const std::string kStyle = R"(
body { font: 15px/1.45 system-ui, sans-serif; color: #1b1b1b; margin: 2em auto; max-width: 68em; padding: 0 1em; }
h1 { font-size: 1.5em; margin-bottom: 0.2em; }
.meta { color: #555; font-size: 0.92em; }
.verdict { display: inline-block; padding: 0.15em 0.6em; border-radius: 0.3em; color: #fff; font-weight: bold; }
.verdict.passed { background: #1a7f37; }
.verdict.other { background: #b42318; }
.met { color: #1a7f37; } .missed { color: #b42318; } .not_assessed, .not_established { color: #9a6700; }
.status { font-weight: bold; display: inline-block; min-width: 8em; margin-right: 0.5em; }
ul.focus { list-style: none; padding-left: 0; }
ul.focus li { margin-bottom: 0.8em; }
.explanation { margin: 0.3em 0 0.3em 8em; color: #333; }
.check { margin: 0.3em 0 0 8em; }
.evidence { margin: 0.1em 0 0 9em; font-family: ui-monospace, monospace; font-size: 0.88em; color: #444; }
td .evidence { margin-left: 0; }
table { border-collapse: collapse; }
td, th { border-bottom: 1px solid #ddd; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
pre { background: #f6f8fa; padding: 0.8em; overflow-x: auto; white-space: pre-wrap; }
.maps { display: flex; flex-wrap: wrap; gap: 1.5em; }
figure.map { margin: 0; }
figcaption { font-size: 0.9em; color: #333; text-align: center; }
)" + std::string(kSvgStyle) + R"(
.differs { color: #b42318; font-weight: bold; } .same { color: #1a7f37; font-weight: bold; }
.note { color: #9a6700; }
)";

}  // namespace

std::string html_escape(const std::string& text) { return escape(text); }

std::vector<FigureImage> figure_images(const GradeReport& report) {
  std::vector<FigureImage> images;
  for (const auto& figure : report.figures) {
    if (!figure.note.empty() || figure.learner.empty()) continue;
    constexpr int kGap = 16, kCaption = 22;
    std::string body;
    int width = 0, height = 0;
    for (const auto& map : maps_of(figure)) {
      const auto svg = heatmap_svg(map, figure.masked_keys);
      // Wide enough for its caption (11 px monospace: about 7 px a character), the heatmap centred.
      const int segment = std::max(svg.width, static_cast<int>(map.caption.size()) * 7 + 8);
      body += fmt::format("<g transform=\"translate({},0)\">{}</g><text x=\"{}\" y=\"{}\">{}</text>",
                          width + (segment - svg.width) / 2, svg.text, width + segment / 2, svg.height + kCaption - 6,
                          escape(map.caption));
      width += segment + kGap;
      height = std::max(height, svg.height + kCaption);
    }
    images.push_back({figure.title + " (" + figure.input + ")",
                      fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
                                  "viewBox=\"0 0 {} {}\"><style>{}</style><rect width=\"100%\" height=\"100%\" "
                                  "fill=\"#fff\"/>{}</svg>",
                                  width, height, width, height, kSvgStyle, body)});
  }
  return images;
}

std::string html_page_start(const std::string& title) {
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/>";
  // Nothing may load or run: the page works offline and learner text in it stays text.
  out +=
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
      "img-src data:\"/>";
  out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>";
  out += "<title>" + escape(title) + "</title>";
  out += "<style>" + std::string(kStyle) + "</style></head><body>";
  return out;
}

std::string render_html(const GradeReport& report) {
  std::string out = html_page_start(report.exercise + " — " + verdict_name(report.verdict));
  out += "<h1>" + escape(report.exercise + (report.title.empty() ? "" : " — " + report.title)) + "</h1>";
  out += "<p class=\"meta\">submission: " + escape(report.submission) +
         fmt::format("<br/>seed: {} (replay with --seed {})", report.seed, report.seed) + "</p>";
  out += fmt::format("<p><span class=\"verdict {}\">{}</span>", report.verdict == Verdict::passed ? "passed" : "other",
                     verdict_name(report.verdict));
  if (!report.checks.empty()) out += " " + escape(check_counts(report));
  out += "</p><p>" + escape(report.summary) + "</p>";

  if (!report.figures.empty()) {
    out += "<h2>Attention weights</h2>";
    for (const auto& figure : report.figures) out += figure_section(figure);
  }

  if (!report.focus_points.empty() && !report.checks.empty()) {
    out += "<h2>Interview focus points</h2><ul class=\"focus\">";
    std::set<std::string> shown;
    for (const auto& focus : report.focus_points) {
      const auto status = focus_status_name(focus.status);
      out += "<li><span class=\"status " + status + "\">" +
             focus_status_label(focus.status) +
             "</span> " + escape(focus.point.title) + " <span class=\"meta\">[" + escape(focus.point.id) + "]</span>";
      if (focus.status == FocusStatus::missed) {
        out += "<div class=\"explanation\">" + escape(focus.point.explanation) + "</div>";
        for (size_t index : focus.failed) {
          const auto& check = report.checks[index];
          const bool first = shown.insert(check.message).second;
          out += "<div class=\"check missed\">✗ " + escape(check.id) + ": " +
                 (first ? escape(check.message) : "the same as above") + "</div>";
          if (!first) continue;
          for (const auto& line : check.evidence) out += "<div class=\"evidence\">" + escape(line) + "</div>";
        }
      }
      out += "</li>";
    }
    out += "</ul>";
  }

  if (!report.checks.empty()) {
    out +=
        "<h2>Checks</h2><table><thead><tr><th>check</th><th>focus point</th><th>status</th><th>result</th>"
        "</tr></thead><tbody>";
    for (const auto& check : report.checks) {
      const auto status = check_status_name(check.status);
      out += "<tr><td>" + escape(check.id) + "</td><td>" + escape(check.focus_point) + "</td><td class=\"" +
             (check.status == CheckStatus::passed   ? "met"
              : check.status == CheckStatus::failed ? "missed"
                                                    : "not_assessed") +
             "\">" + escape(status) + "</td><td>" + escape(check.message);
      if (check.status != CheckStatus::passed) {
        for (const auto& line : check.evidence) out += "<div class=\"evidence\">" + escape(line) + "</div>";
      }
      out += "</td></tr>";
    }
    out += "</tbody></table>";
  }
  out += pre("Compiler output", report.compiler_output);
  out += pre("Your program's standard output", report.program_stdout);
  out += pre("Your program's standard error", report.program_stderr);
  out += fmt::format("<p class=\"meta\">compile {:.1f} s{}, run {:.1f} s, total {:.1f} s{}</p>", report.compile_seconds,
                     report.compile_cached ? " (reused)" : "", report.run_seconds, report.total_seconds,
                     report.sandbox.empty() ? std::string() : "; sandbox: " + escape(report.sandbox));
  out += "</body></html>\n";
  return out;
}

}  // namespace grader
