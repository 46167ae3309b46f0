// The private channel: what the child sends is validated, never trusted.
#include "wire/wire.h"
#include "wire/fields.h"
#include "wire/keys.h"
#include "wire/messages.h"
#include "wire/trace.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace grader::wire {
namespace {

// Text a learner chooses (a module's name) travels as one field: escaped, it
// holds no blank, line break or '%', and reads back as it was, whatever it is.
TEST(Fields, LearnerTextIsOneFieldAndReadsBackAsItWas) {
  const std::vector<std::string> names = {"dropout",     "dropout x",   "pe Double 0 50 16", "",  "%",   "%41",
                                          "a\nb\rc\td", std::string("nul\0in", 6), "\x7f\x01", "ä漢\xc3(", "100%"};
  for (const auto& name : names) {
    const auto escaped = escape_field(name);
    EXPECT_EQ(escaped.find_first_of(std::string(" \n\r\t", 4)), std::string::npos) << escaped;
    EXPECT_FALSE(escaped.empty());
    EXPECT_EQ(unescape_field(escaped), name) << escaped;
    const auto lines = field_lines(fields_line({name, "0.25"}) + fields_line({"next", name, "3"}));
    ASSERT_EQ(lines.size(), 2u) << escaped;
    EXPECT_EQ(lines[0], (std::vector<std::string>{name, "0.25"}));
    EXPECT_EQ(lines[1], (std::vector<std::string>{"next", name, "3"}));
  }
}

// Numbers read whole or not at all, and never throw (one row per rule).
TEST(Fields, NumbersReadWholeOrNotAtAll) {
  EXPECT_EQ(number_field("0.25"), 0.25);
  EXPECT_EQ(number_field("-1e-9"), -1e-9);
  for (const char* bad : {"", "x", "0.25x", " 1", "nan", "inf", "1e999", "x 0.1"}) {
    EXPECT_FALSE(number_field(bad).has_value()) << bad;
  }
  EXPECT_EQ(integer_field("50"), 50);
  for (const char* bad : {"", "5.0", "50 16", "99999999999999999999999", "-"}) {
    EXPECT_FALSE(integer_field(bad).has_value()) << bad;
  }
  // A '%' without two hex digits after it stays as it is.
  EXPECT_EQ(unescape_field("%zz%4"), "%zz%4");
}

// What the runner wrote on its result channel, taken apart (one row per rule):
// the ready line, the case markers (the last one counts), the message after.
// The trace as the runner writes it is the trace the checks read: every
// field, through an encoded message; and the fields' text, as it travels, reads
// as it always has (what a runner of this version sends).
TEST(Trace, WhatTheRunnerPutsTheChecksRead) {
  using Kind = grader::wire::DeviceEvent::Kind;
  grader::wire::Trace trace;
  trace.op_counts = {{"aten::matmul", 2}, {"a name with spaces\nand a newline", 1}};
  trace.device_events = {{Kind::item, "aten::item", ""},
                         {Kind::mixed, "aten::add", "aten::ones"},
                         {Kind::to_host, "my op 2 x", ""}};
  trace.largest_output = grader::wire::LargestOutput{384, "aten::softmax", {2, 3, 4, 4}};
  trace.scope_work = {{96, 24, 96, 7, 1500}, {48, 12, 0, 3, 900}};
  trace.heap_growth = 4096;
  trace.static_bytes = 12;
  trace.recording_intact = true;
  grader::wire::Record response;
  grader::wire::put_trace(response, trace);
  EXPECT_EQ(response.string("device_events"),
            "item aten::item\nmixed aten::add aten::ones\nto_host my%20op%202%20x\n");
  EXPECT_EQ(response.string("largest_output"), "384 aten::softmax 2 3 4 4\n");
  EXPECT_EQ(response.string("scope_work"), "96/24/96/7/1500 48/12/0/3/900");
  const auto sent = grader::wire::decode(grader::wire::encode({response}));
  ASSERT_EQ(sent.size(), 1u);
  const auto read = grader::wire::trace_of(sent.front());
  EXPECT_EQ(read.op_counts, trace.op_counts);
  EXPECT_EQ(read.device_events, trace.device_events);
  ASSERT_TRUE(read.largest_output.has_value());
  EXPECT_EQ(read.largest_output->bytes, 384);
  EXPECT_EQ(read.largest_output->sizes, (std::vector<int64_t>{2, 3, 4, 4}));
  ASSERT_EQ(read.scope_work.size(), 2u);
  EXPECT_EQ(read.scope_work[1].elements, 12);
  EXPECT_EQ(read.scope_work[1].calls, 3);
  EXPECT_EQ(read.scope_work[1].cpu_ns, 900);
  EXPECT_EQ(read.heap_growth, 4096);
  EXPECT_EQ(read.static_bytes, 12);
  EXPECT_TRUE(read.recording_intact);
}

// A response without a trace (code that stopped early), or with fields a
// learner garbled, reads as what can be read of it.
TEST(Trace, MissingOrGarbledFieldsReadAsEmpty) {
  grader::wire::Record response;
  auto empty = grader::wire::trace_of(response);
  EXPECT_TRUE(empty.op_counts.empty());
  EXPECT_TRUE(empty.device_events.empty());
  EXPECT_FALSE(empty.largest_output.has_value());
  EXPECT_FALSE(empty.recording_intact);
  response.strings["device_events"] = "mixed\nteleport aten::x\nto_host aten::to\n";
  response.strings["largest_output"] = "lots aten::x";
  response.strings["scope_work"] = "1/2/3 4/5/6/7 x/y 4/5/6";
  response.ints["op:"] = 3;
  const auto garbled = grader::wire::trace_of(response);
  ASSERT_EQ(garbled.device_events.size(), 1u);
  EXPECT_EQ(garbled.device_events[0].kind, grader::wire::DeviceEvent::Kind::to_host);
  EXPECT_FALSE(garbled.largest_output.has_value());
  ASSERT_EQ(garbled.scope_work.size(), 2u);  // up to the first entry that does not read as one
  EXPECT_EQ(garbled.scope_work[0].calls, 0);  // written before calls were counted
  EXPECT_EQ(garbled.scope_work[1].calls, 7);
  EXPECT_EQ(garbled.op_counts.at(""), 3);
}

// The grader's planned case crosses as the runner's CaseRequest: the
// envelope in named fields, the rest for the driver; the driver's record
// holds both, as before.
TEST(Messages, ARequestCrossesWithItsEnvelopeTyped) {
  Record planned;
  planned.strings["case"] = "forward_float64";
  planned.ints["seed"] = 42;
  planned.strings["device"] = "cpu";
  planned.strings["describe"] = "B=2, T=3";
  planned.tensors[key::input("x")] = at::ones({2, 3}, at::kDouble);
  const auto read = decode_requests(encode_requests({CaseRequest::of(planned)}));
  ASSERT_EQ(read.size(), 1u);
  EXPECT_EQ(read[0].id, "forward_float64");
  EXPECT_EQ(read[0].seed, 42);
  EXPECT_EQ(read[0].kind, "");
  EXPECT_EQ(read[0].device, "cpu");
  EXPECT_FALSE(read[0].fields.strings.count("case"));
  EXPECT_FALSE(read[0].fields.ints.count("seed"));
  EXPECT_EQ(read[0].fields.string("describe"), "B=2, T=3");
  const auto driver = read[0].driver_record();
  EXPECT_EQ(driver.string("case"), "forward_float64");
  EXPECT_EQ(driver.integer("seed"), 42);
  EXPECT_TRUE(at::equal(driver.tensor(key::input("x")), planned.tensor(key::input("x"))));
}

// A request the runner cannot run as asked is refused whole, naming why
// (one row per rule).
TEST(Messages, ARequestWithoutIdOrSeedOrWithTwoOfOneIdIsRefused) {
  Record whole;
  whole.strings["case"] = "a";
  whole.ints["seed"] = 1;
  Record no_id = whole, no_seed = whole;
  no_id.strings.erase("case");
  no_seed.ints.erase("seed");
  const std::vector<std::pair<std::vector<Record>, std::string>> rows = {
      {{no_id}, "missing string 'case'"},
      {{no_seed}, "missing integer 'seed'"},
      {{whole, whole}, "two cases named 'a'"},
  };
  for (const auto& [records, why] : rows) {
    try {
      decode_requests(encode(records));
      ADD_FAILURE() << "accepted; expected: " << why;
    } catch (const WireError& error) {
      EXPECT_EQ(std::string(error.what()), why);
    }
  }
}

// The runner's reply: a load failure alone, or per case its id, what the code
// threw, the trace, and the driver's outputs, each read back into its field
// (the envelope's keys never among the outputs).
TEST(Messages, AReplyReadsBackFieldByField) {
  Reply failed;
  failed.load_error = "undefined symbol: forward";
  const auto failed_read = decode_reply(encode_reply(failed));
  ASSERT_TRUE(failed_read.load_error.has_value());
  EXPECT_EQ(*failed_read.load_error, "undefined symbol: forward");
  EXPECT_TRUE(failed_read.cases.empty());

  Reply reply;
  CaseReply ran, threw, timed;
  ran.id = "forward";
  ran.trace = Trace{};
  ran.trace->op_counts = {{"aten::matmul", 2}};
  ran.trace->recording_intact = true;
  ran.outputs.tensors["output"] = at::zeros({2}, at::kDouble);
  threw.id = "refusal";
  threw.error = "shape mismatch";
  threw.trace = Trace{};
  timed.id = "speed";
  timed.outputs.reals["speed.0.learner_ms"] = 2.5;
  reply.cases = {ran, threw, timed};
  const auto read = decode_reply(encode_reply(reply));
  EXPECT_FALSE(read.load_error.has_value());
  ASSERT_EQ(read.cases.size(), 3u);
  EXPECT_EQ(read.cases[0].id, "forward");
  EXPECT_FALSE(read.cases[0].error.has_value());
  ASSERT_TRUE(read.cases[0].trace.has_value());
  EXPECT_EQ(read.cases[0].trace->op_counts, ran.trace->op_counts);
  EXPECT_TRUE(read.cases[0].trace->recording_intact);
  EXPECT_EQ(read.cases[0].outputs.tensors.size(), 1u);
  EXPECT_TRUE(read.cases[0].outputs.ints.empty()) << "trace fields left among the outputs";
  EXPECT_TRUE(read.cases[0].outputs.strings.empty()) << "envelope or trace fields left among the outputs";
  EXPECT_EQ(read.cases[1].error.value_or(""), "shape mismatch");
  EXPECT_TRUE(read.cases[1].trace.has_value());
  EXPECT_FALSE(read.cases[2].trace.has_value());
  EXPECT_EQ(read.cases[2].outputs.real("speed.0.learner_ms"), 2.5);
}

// Each kind of field key names its field and reads back to it; a key of
// another kind, or a bare prefix's neighbour, is not one.
TEST(WireKeys, EachKindReadsBackAndNoOther) {
  namespace key = grader::wire::key;
  EXPECT_EQ(key::input_name(key::input("query")), "query");
  EXPECT_EQ(key::param_name(key::param("layers.0.linear1.weight")), "layers.0.linear1.weight");
  EXPECT_EQ(key::ctor_name(key::ctor("d_model")), "d_model");
  EXPECT_EQ(key::dim_name(key::dim("Nq")), "Nq");
  EXPECT_EQ(key::arg_name(key::arg("key_offset")), "key_offset");
  EXPECT_FALSE(key::input_name(key::param("query")).has_value());
  EXPECT_FALSE(key::param_name(key::grad_param("w")).has_value());
  EXPECT_FALSE(key::input_name(key::grad_input("x")).has_value());
  EXPECT_FALSE(key::dim_name("dimension").has_value());
  EXPECT_FALSE(key::input_name("inputs.x").has_value());
  EXPECT_EQ(key::input_name("input."), "");
}

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
