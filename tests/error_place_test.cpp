// Where a learner's error was raised (judge/error_place.h): addr2line's
// answer read as places, one per address, the unknown left empty.
#include <gtest/gtest.h>

#include "judge/error_place.h"

namespace grader {
namespace {

TEST(ErrorPlace, Addr2lineOutputReadAsPlaces) {
  const std::string output =
      "MultiHeadSelfAttentionImpl::forward(at::Tensor const&)\n"
      "/tmp/grader-x/work/mhsa.cpp:23\n"
      "??\n"
      "??:0\n"
      "helper\n"
      "/tmp/w/mhsa.cpp:41 (discriminator 2)\n"
      "at::Tensor::matmul(at::Tensor const&) const\n"
      "/usr/include/ATen/core/TensorBody.h:3010\n"
      "??\n"
      "/tmp/w/mhsa.cpp:7\n"
      "f\n"
      "/tmp/w/mhsa.cpp:?\n";
  const auto places = parse_addr2line(output, 7);
  const std::vector<std::string> want = {"mhsa.cpp:23 in MultiHeadSelfAttentionImpl::forward",
                                         "",
                                         "mhsa.cpp:41 in helper",
                                         "TensorBody.h:3010 in at::Tensor::matmul",
                                         "mhsa.cpp:7",
                                         "",
                                         ""};  // fewer lines than addresses: unknown
  EXPECT_EQ(places, want);
}

TEST(ErrorPlace, NothingToLocate) {
  // No frames, no tool, no object: every place empty, never an error.
  EXPECT_EQ(error_places("", "/nonexistent.so", "mhsa.cpp", {std::nullopt, std::string("1a\n")}),
            (std::vector<std::string>{"", ""}));
  EXPECT_EQ(error_places("/usr/bin/addr2line", "/nonexistent.so", "mhsa.cpp", {std::string("zz\n")}),
            (std::vector<std::string>{""}));
}

}  // namespace
}  // namespace grader
