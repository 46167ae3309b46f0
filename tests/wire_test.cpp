// The private channel: what the child sends is validated, never trusted.
#include "wire/wire.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace grader::wire {
namespace {

// What the runner wrote on its result channel, taken apart (one row per rule):
// the ready line, the case markers (the last one counts), the message after.
TEST(Wire, SplitsTheRunnerStream) {
  struct Row {
    std::string bytes;
    bool ready;
    std::optional<size_t> last_started;
    std::string results;
  };
  const std::vector<Row> rows = {
      {"", false, std::nullopt, ""},
      {"garbage", false, std::nullopt, ""},
      {"RUNNER-READY\n", true, std::nullopt, ""},                       // stopped while loading
      {"RUNNER-READY\nCASE 0\n", true, 0, ""},                          // stopped in the first case
      {"RUNNER-READY\nCASE 0\nCASE 1\nCASE 2\n", true, 2, ""},
      {"RUNNER-READY\nCASE 0\nCASE 1\nATTNWIR1xyz", true, 1, "ATTNWIR1xyz"},  // every case ran
      {"RUNNER-READY\nCASE 0\nCASE 1", true, 0, "CASE 1"},              // cut off mid-line
      {"RUNNER-READY\nCASE \n", true, std::nullopt, "CASE \n"},         // no number
      {"RUNNER-READY\nCASE 1x\n", true, std::nullopt, "CASE 1x\n"},
      {"RUNNER-READY\nCASE 1234567890\n", true, std::nullopt, "CASE 1234567890\n"},  // too long to be an index
      {"RUNNER-READY\nATTNWIR1CASE 3\n", true, std::nullopt, "ATTNWIR1CASE 3\n"},  // none after the message
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.bytes);
    const auto stream = split_runner_stream(row.bytes);
    EXPECT_EQ(stream.ready, row.ready);
    EXPECT_EQ(stream.last_started, row.last_started);
    EXPECT_EQ(stream.results, row.results);
  }
}

// What follows the whole markers, read as the stream arrives: a marker's first
// bytes (a read split its line) are not yet the results.
TEST(Wire, ProgressTellsACutMarkerFromTheResults) {
  const struct {
    const char* bytes;
    size_t markers;
    bool marker_cut;
  } rows[] = {
      {"RUNNER-READY\n", 1, false},                 // nothing follows
      {"RUNNER-READY\nCASE 0\nCA", 2, true},         // a marker's first bytes
      {"RUNNER-READY\nCASE 0\nCASE ", 2, true},
      {"RUNNER-READY\nCASE 0\nCASE 12", 2, true},    // its index, not yet its newline
      {"RUNNER-READY\nCASE 0\nCASE 12x", 2, false},  // no marker goes on like that
      {"RUNNER-READY\nCASE 0\nCASE 1234567890", 2, false},
      {"RUNNER-READY\nCASE 0\nATTNWIR1", 2, false},  // the results
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.bytes);
    const auto progress = runner_progress(row.bytes);
    EXPECT_EQ(progress.markers, row.markers);
    EXPECT_EQ(progress.marker_cut, row.marker_cut);
  }
}

TEST(Wire, RoundTripsEveryKind) {
  Record record;
  record.tensors["x"] = at::randn({2, 3}, at::kDouble);
  record.tensors["f"] = at::randn({4}, at::kFloat);
  record.tensors["m"] = at::ones({2, 2}, at::kBool);
  record.tensors["undefined"] = at::Tensor();
  record.ints["n"] = -7;
  record.reals["p"] = 0.25;
  record.strings["s"] = std::string("with\0nul", 8);
  auto decoded = decode(encode({record, Record{}}));
  ASSERT_EQ(decoded.size(), 2u);
  EXPECT_TRUE(at::equal(decoded[0].tensor("x"), record.tensors["x"]));
  EXPECT_TRUE(at::equal(decoded[0].tensor("f"), record.tensors["f"]));
  EXPECT_TRUE(at::equal(decoded[0].tensor("m"), record.tensors["m"]));
  EXPECT_FALSE(decoded[0].tensor("undefined").defined());
  EXPECT_EQ(decoded[0].integer("n"), -7);
  EXPECT_EQ(decoded[0].real("p"), 0.25);
  EXPECT_EQ(decoded[0].string("s"), record.strings["s"]);
}

TEST(Wire, SendsNonContiguousTensorsByValue) {
  Record record;
  auto base = at::arange(12, at::kDouble).reshape({3, 4});
  record.tensors["t"] = base.transpose(0, 1);
  auto decoded = decode(encode({record}));
  EXPECT_TRUE(at::equal(decoded[0].tensor("t"), base.transpose(0, 1)));
}

TEST(Wire, RejectsEveryTruncation) {
  Record record;
  record.tensors["x"] = at::randn({3, 3}, at::kDouble);
  record.strings["case"] = "shape_0";
  auto bytes = encode({record});
  for (size_t keep = 0; keep < bytes.size(); ++keep) {
    EXPECT_THROW(decode(bytes.substr(0, keep)), WireError) << "kept " << keep << " bytes";
  }
}

TEST(Wire, RejectsTrailingBytesAndBadHeaders) {
  auto bytes = encode({Record{}});
  EXPECT_THROW(decode(bytes + "x"), WireError);
  EXPECT_THROW(decode("not a message"), WireError);
  EXPECT_THROW(decode(""), WireError);
}

TEST(Wire, RejectsSizesLargerThanTheMessage) {
  Record record;
  record.tensors["x"] = at::zeros({2}, at::kDouble);
  auto bytes = encode({record});
  // The first size of tensor "x" sits right after its dims count; claim 2^40 elements.
  auto at_size = bytes.find(std::string("x", 1)) + 1 + 1 + 4;
  int64_t huge = int64_t{1} << 40;
  bytes.replace(at_size, sizeof(huge), reinterpret_cast<const char*>(&huge), sizeof(huge));
  EXPECT_THROW(decode(bytes), WireError);
}

TEST(Wire, RejectsInvalidBools) {
  Record record;
  record.tensors["b"] = at::zeros({4}, at::kBool);
  auto bytes = encode({record});
  bytes[bytes.size() - 1] = 7;
  EXPECT_THROW(decode(bytes), WireError);
}

TEST(Wire, MissingFieldsNameTheKey) {
  Record record;
  try {
    record.tensor("query");
    FAIL() << "expected WireError";
  } catch (const WireError& error) {
    EXPECT_NE(std::string(error.what()).find("query"), std::string::npos);
  }
}

}  // namespace
}  // namespace grader::wire
