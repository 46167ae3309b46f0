// The two messages between the grader and the runner, as types. The grader
// sends one CaseRequest per case, in order; the runner answers with a Reply:
// either why the submission could not be loaded, or one CaseReply per case,
// in the same order. Each message has one encoder and one decoder, and both
// sides use them; the bytes are wire.h's records, validated as they decode.
//
// What an exercise's driver reads and writes (inputs, parameters, outputs)
// stays a Record keyed by the names exercise.yaml gives (keys.h): those names
// are the exercise's data, not fields of the protocol.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "wire/trace.h"
#include "wire/wire.h"

namespace grader::wire {

struct CaseRequest {
  std::string id;               // unique within a message
  int64_t seed = 0;             // LibTorch's default generator is seeded with it before the case
  std::string kind;             // "speed": timed, not traced; otherwise the driver's to read
  std::string device = "cpu";   // where the case runs
  Record fields;                // the rest of the case, for the driver

  // A planned case (the grader's record of it) taken apart; WireError names
  // a missing "case" or "seed".
  static CaseRequest of(Record planned);
  // The record the driver reads: the fields and the four above.
  Record driver_record() const;
};

std::string encode_requests(const std::vector<CaseRequest>& requests);
// WireError on malformed bytes, a case without an id or seed, or two cases
// with one id.
std::vector<CaseRequest> decode_requests(const std::string& bytes);

struct CaseReply {
  std::string id;                    // the request's, echoed (empty if the runner sent none)
  std::optional<std::string> error;  // what the learner's code threw
  // Where: the learner object's frames of a LibTorch error's backtrace, as
  // hex offsets into its file, innermost first, one per line (runner/main.cpp).
  std::optional<std::string> error_frames;
  std::optional<Trace> trace;        // what the runner recorded of the call; none for a timed run
  Record outputs;                    // what the driver wrote
};

struct Reply {
  std::optional<std::string> load_error;  // the submission could not be loaded: no case ran
  std::vector<CaseReply> cases;
};

std::string encode_reply(const Reply& reply);
// WireError on malformed bytes. A record with a load error is that, alone.
Reply decode_reply(const std::string& bytes);

}  // namespace grader::wire
