// Isolation twins: planned beside the cases the numerics checks judge, read
// when such a check fails without a known mistake or a measurement to explain
// it (Kit::explain). The rule that decides is place_difference.
#include "checks/kit/isolation.h"

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>

#include "checks/kit/kit.h"
#include "base/errors.h"

namespace grader::kit {

std::string isolation_case(const std::string& id, const std::string& which) { return id + "~isolate:" + which; }

at::Tensor neutral_value(const std::string& setting, const at::Tensor& like) {
  if (setting == "zero") return at::zeros_like(like);
  if (setting == "one") return at::ones_like(like);
  if (setting == "identity" && like.dim() == 2) return at::eye(like.size(0), like.size(1), like.options());
  throw ConfigError("isolate: cannot set a parameter of shape " + shape_string(like.sizes()) + " to " + setting);
}

Placement place_difference(TwinMatch every_part_off, const std::vector<PartOutcome>& parts) {
  Placement placement;
  if (every_part_off == TwinMatch::unknown || parts.empty()) return placement;
  if (every_part_off == TwinMatch::differs) {
    placement.where = Placement::Where::rest;
    return placement;
  }
  std::vector<std::string> differing;
  for (const auto& part : parts) {
    if (part.alone == TwinMatch::unknown) return placement;
    if (part.alone == TwinMatch::differs) differing.push_back(part.part);
  }
  if (differing.empty()) {
    placement.where = Placement::Where::combination;
  } else if (differing.size() > 1) {
    placement.where = Placement::Where::several;
    placement.parts = differing;
  } else {
    placement.where = Placement::Where::part;
    placement.part = differing.front();
    const auto& outcome = *std::find_if(parts.begin(), parts.end(), [&](const auto& p) { return p.part == differing[0]; });
    placement.inside = outcome.blind == TwinMatch::differs;
  }
  return placement;
}

namespace {

// "q_proj.weight = identity, q_proj.bias = 0": a part's settings, said.
std::string said(const std::vector<std::pair<std::string, std::string>>& settings) {
  std::vector<std::string> items;
  for (const auto& [name, value] : settings) items.push_back(name + " = " + (value == "zero" ? "0" : value == "one" ? "1" : value));
  return fmt::format("{}", fmt::join(items, ", "));
}

}  // namespace

void Kit::plan_isolation(std::vector<wire::Record>& cases, int64_t& case_seed) const {
  const auto& parts = exercise_.isolation.parts;
  if (parts.empty()) return;
  // Of each numerics check, its smallest case (by the product of its
  // dimensions): twins cost run time on every grade, and the smallest
  // configuration is where a learner starts.
  std::set<std::string> bases;
  for (const auto& check : exercise_.checks) {
    if (check.kind != "numerics") continue;
    const CaseSpec* smallest = nullptr;
    for (const auto& spec : cases_) {
      if (std::find(check.cases.begin(), check.cases.end(), spec.id) == check.cases.end()) continue;
      if (!smallest || case_size(spec) < case_size(*smallest)) smallest = &spec;
    }
    if (smallest) bases.insert(smallest->id);
  }
  for (const auto& id : bases) {
    const auto base = planned_case(cases, id, "isolate");
    const auto dims = dims_of(base);
    auto apply = [&](wire::Record& twin, const std::vector<std::pair<std::string, std::string>>& settings) {
      for (const auto& [name, value] : settings) {
        for (const auto& param : parameters_of({TensorSpec{name, {}, "randn", ""}}, dims)) {
          auto& tensor = twin.tensors.at(wire::key::param(param.name));
          tensor = neutral_value(value, tensor);
        }
      }
    };
    auto twin_of = [&](const std::string& which, const std::string& describe) {
      auto twin = base;
      twin.tensors.erase("grad_output");
      twin.strings["case"] = isolation_case(id, which);
      twin.strings["describe"] += ", " + describe;
      twin.ints["seed"] = case_seed++;
      return twin;
    };
    std::vector<std::string> names;
    for (const auto& part : parts) names.push_back(part.says);
    auto every_off = twin_of("off", "every part off (" + fmt::format("{}", fmt::join(names, "; ")) + ")");
    for (const auto& part : parts) apply(every_off, part.off);
    cases.push_back(std::move(every_off));
    for (const auto& part : parts) {
      auto others_off = [&](wire::Record& twin) {
        for (const auto& other : parts) {
          if (other.id != part.id) apply(twin, other.off);
        }
      };
      if (parts.size() > 1) {
        auto alone = twin_of("only." + part.id, "only " + part.says + " on");
        others_off(alone);
        cases.push_back(std::move(alone));
      }
      if (!part.blind.empty()) {
        auto blind = twin_of("blind." + part.id, (parts.size() > 1 ? "only " : "") + part.says + " on, blind to its input (" + said(part.blind) + ")");
        others_off(blind);
        apply(blind, part.blind);
        cases.push_back(std::move(blind));
      }
    }
  }
}

std::optional<CheckResult> Kit::isolate(const std::string& check, const std::string& case_id,
                                        std::vector<std::string>& evidence) const {
  const auto& parts = exercise_.isolation.parts;
  if (parts.empty() || !input_->cases.count(isolation_case(case_id, "off"))) return std::nullopt;
  if (status(case_id) == CaseStatus::matches || status(case_id) == CaseStatus::threw) return std::nullopt;
  auto match = [&](const std::string& which) {
    const auto id = isolation_case(case_id, which);
    if (!input_->cases.count(id)) return TwinMatch::unknown;
    switch (status(id)) {
      case CaseStatus::matches: return TwinMatch::matches;
      case CaseStatus::precision:
      case CaseStatus::differs: return TwinMatch::differs;
      default: return TwinMatch::unknown;
    }
  };
  auto word = [](TwinMatch m) { return m == TwinMatch::matches ? "matches" : m == TwinMatch::differs ? "differs" : "cannot be judged"; };
  const auto every_off = match("off");
  std::vector<PartOutcome> outcomes;
  std::vector<std::string> lines = {fmt::format("{}: with every part off yours {}", input_->at(isolation_case(case_id, "off")).describe(), word(every_off))};
  for (const auto& part : parts) {
    PartOutcome outcome{part.id, parts.size() > 1 ? match("only." + part.id) : TwinMatch::differs,
                        part.blind.empty() ? TwinMatch::unknown : match("blind." + part.id)};
    if (parts.size() > 1) lines.push_back(fmt::format("only {} on: yours {}", part.says, word(outcome.alone)));
    if (!part.blind.empty()) lines.push_back(fmt::format("{} blind to its input ({}): yours {}", part.says, said(part.blind), word(outcome.blind)));
    outcomes.push_back(outcome);
  }
  const auto placement = place_difference(every_off, outcomes);
  using Where = Placement::Where;
  if (placement.where == Where::unknown) return std::nullopt;
  auto part_of = [&](const std::string& id) -> const PartSpec& {
    return *std::find_if(parts.begin(), parts.end(), [&](const PartSpec& p) { return p.id == id; });
  };
  std::string message;
  std::string point;
  switch (placement.where) {
    case Where::rest:
      message = "the difference lies in what stays with every part switched off through its weights (" +
                exercise_.isolation.rest + "): with them off yours still differs from the reference";
      break;
    case Where::combination:
      message = "each part on its own (the others switched off through their weights) matches the reference, the "
                "whole does not: the difference lies in how the parts are put together (their order, or what one "
                "passes to the next)";
      break;
    case Where::several: {
      std::vector<std::string> names;
      for (const auto& id : placement.parts) names.push_back(part_of(id).says);
      message = fmt::format("the difference shows with each of {} on alone, and not with every part off: it lies in "
                            "more than one part, or in what they share",
                            fmt::join(names, " and "));
      break;
    }
    case Where::part: {
      const auto& part = part_of(placement.part);
      if (placement.inside) {
        message = "the difference lies inside " + part.says + ": it shows with that part on alone, and not with "
                  "every part off, and it stays when that part is blind to its input, so what it computes is wrong, "
                  "not only what it is given";
        point = part.focus_point;
      } else {
        message = "the difference lies where " + part.says + " acts: it shows with that part on alone and not with "
                  "every part off" +
                  (part.blind.empty() ? std::string("; whether in it or in what it is given, the grader cannot tell")
                                      : "; blind to its input the part matches, so look first at what it is given "
                                        "(the tensor passed in), then at how it uses that input");
      }
      break;
    }
    default: break;
  }
  // Placed but tied to no focus point: unexplained, like any failure no evidence ties to one.
  if (point.empty()) message = "unexplained: " + message + "; what differs there is no mistake the grader knows";
  auto result = results_.fail(check, message, evidence);
  result.evidence.insert(result.evidence.end() - 1, lines.begin(), lines.end());
  if (!point.empty() && has_focus_point(point)) {
    result.focus_point = point;
  } else {
    result.blames_focus = false;
  }
  return result;
}

}  // namespace grader::kit
