// Isolation twins (exercise.yaml's `isolate:`): where in a module an
// unexplained difference lies. Each part of the module (a sub-layer, the
// projections) is switched off through its weights; a difference that stays
// with every part off lies in the rest; one that shows with a single part on,
// and not with every part off, lies where that part acts. Only where the part,
// made blind to its input (its first weights zero), still differs does the
// difference lie inside it, and only then is the part's focus point named: a
// part fed the wrong tensor differs alone but matches blind.
#pragma once

#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

namespace grader::kit {

// The case id of an isolation twin of yaml case `id`: which is "off" (every
// part off), "only.<part>" (the others off) or "blind.<part>" (the others
// off, that one blind).
std::string isolation_case(const std::string& id, const std::string& which);

// A parameter's value for a setting of `isolate:` (zero, one, identity: the
// identity of a non-square weight is its rectangle of the identity), shaped
// and typed as `like`.
at::Tensor neutral_value(const std::string& setting, const at::Tensor& like);

enum class TwinMatch { matches, differs, unknown };  // unknown: not run, or it threw

struct PartOutcome {
  std::string part;
  TwinMatch alone = TwinMatch::unknown;  // with the other parts off (a lone part: the case itself)
  TwinMatch blind = TwinMatch::unknown;  // the same with this part blind; unknown where it has no blind settings
};

struct Placement {
  enum class Where {
    unknown,      // a twin that decides could not be judged
    rest,         // it still differs with every part off
    part,         // it shows with one part on alone (part; inside: it differs blind too)
    combination,  // each part alone matches, together they do not
    several,      // it shows with each of `parts` on alone
  } where = Where::unknown;
  std::string part;
  bool inside = false;
  std::vector<std::string> parts;
};

// The rule, from how the twins of a differing case came out.
Placement place_difference(TwinMatch every_part_off, const std::vector<PartOutcome>& parts);

}  // namespace grader::kit
