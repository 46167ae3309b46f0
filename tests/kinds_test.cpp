// The kit's kinds table (grader/checks/kit/kinds.cpp): each kind listed once,
// documented, with an implementation, and the measuring ones marked as such.
#include <gtest/gtest.h>

#include <set>

#include "checks/kit/kit.h"

namespace grader::kit {
namespace {

TEST(Kinds, EachListedOnceWithWhatItChecksAndCode) {
  std::set<std::string> seen;
  for (const auto& kind : kinds()) {
    EXPECT_TRUE(seen.insert(kind.name).second) << kind.name << " is listed twice";
    EXPECT_NE(kind.run, nullptr) << kind.name;
    EXPECT_GT(kind.doc.size(), 20u) << kind.name << " says too little of what it checks";
    EXPECT_EQ(find_kind(kind.name), &kind);
  }
  EXPECT_EQ(find_kind("numerics_typo"), nullptr);
  EXPECT_EQ(find_kind(""), nullptr);
}

// Measuring kinds run once per grade and their findings explain other
// failures: which ones measure is part of the verdict rules.
TEST(Kinds, MeasuringKindsAreTheProbesAndDependence) {
  const std::vector<std::pair<std::string, bool>> rows = {
      {"attention_scale", true}, {"attention_axis", true}, {"attention_mask", true}, {"dependence", true},
      {"numerics", false},       {"shapes", false},        {"gradients", false},     {"dropout_sites", false},
      {"no_builtins", false},    {"device_placement", false}};
  for (const auto& [name, measuring] : rows) {
    const auto* kind = find_kind(name);
    ASSERT_NE(kind, nullptr) << name;
    EXPECT_EQ(kind->measurement, measuring) << name;
  }
}

}  // namespace
}  // namespace grader::kit
