// Kind fill_fits: the finite value learner code fills masked scores with must
// hold in a narrow dtype (option `dtype`: float16 or bfloat16) that this
// machine may not run. Measured from the operator trace (the scalar of masked_fill,
// where, full or fill_ in each case): a value that is the same whatever the case's dtype
// is a constant, and it overflows there if it is larger than the dtype's
// largest finite number; a value that follows the dtype (its lowest, say)
// cannot be judged without the dtype itself, and is said so.
#include <fmt/format.h>

#include <cmath>
#include <map>
#include <set>

#include "checks/kit/kit.h"

namespace grader::kit {

namespace {

std::optional<double> largest_finite(const std::string& dtype) {
  if (dtype == "float16") return 65504.0;
  if (dtype == "bfloat16") return 3.3895313892515355e38;
  return std::nullopt;
}

}  // namespace

CheckResult Kit::fill_fits(const CheckSpec& spec) const {
  const auto dtype = spec.option("dtype", "float16");
  const auto largest = largest_finite(dtype);
  if (!largest) throw ConfigError("check '" + spec.id + "': fill_fits needs dtype float16 or bfloat16");
  // The finite fills of each dtype's cases.
  std::map<std::string, std::set<double>> by_dtype;
  std::string where;
  for (const auto& [id, run] : input_->cases) {
    if (run.threw() || !run.recording_intact()) continue;
    const auto values = run.trace().fill_values;
    auto& seen = by_dtype[run.request.string_or("dtype", "float64")];
    for (double value : values) {
      if (std::abs(value) > *largest && where.empty()) where = run.describe();
      seen.insert(value);
    }
  }
  std::set<double> all;
  for (const auto& [name, values] : by_dtype) all.insert(values.begin(), values.end());
  double worst = 0;
  for (double value : all) worst = std::max(worst, std::abs(value));
  if (worst <= *largest) {
    return results_.pass(spec.id, all.empty() ? "no finite fill value: masked scores get -infinity"
                                              : fmt::format("the fill values (up to {:g} in size) fit {}", worst, dtype));
  }
  // The same fills in every dtype's cases: a constant, which overflows the narrow dtype.
  bool constant = by_dtype.size() > 1;
  for (const auto& [name, values] : by_dtype) constant = constant && values == by_dtype.begin()->second;
  if (!constant) {
    return results_.skip(spec.id, fmt::format("not assessed: your fill value follows the dtype (up to {:g} here); "
                                              "whether it fits {} shows only where {} runs",
                                              worst, dtype, dtype));
  }
  return results_.fail(spec.id,
                       fmt::format("masked scores are filled with {:g} in every dtype; {} holds nothing beyond {:g}, "
                                   "so masked_fill refuses that value there (\"value cannot be converted ... without "
                                   "overflow\"): fill with -infinity, which every floating dtype holds",
                                   -worst, dtype, *largest),
                       {"input: " + where, "fill values seen: the same in every dtype's cases"});
}

}  // namespace grader::kit
