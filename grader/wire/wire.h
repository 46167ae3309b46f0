// The private channel between the grader and the child that runs learner code.
//
// A message is a list of records; a record holds named tensors, integers, reals
// and strings. The format is a plain length-prefixed binary layout so that the
// parent can validate every byte the (untrusted) child sends: any malformed,
// truncated or oversized message is rejected with WireError, never trusted.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <stdexcept>
#include <optional>
#include <string>
#include <vector>

namespace grader::wire {

class WireError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Record {
  std::map<std::string, at::Tensor> tensors;
  std::map<std::string, int64_t> ints;
  std::map<std::string, double> reals;
  std::map<std::string, std::string> strings;

  bool has_tensor(const std::string& key) const { return tensors.count(key) > 0; }
  // Lookups throw WireError naming the missing key. They are inline because the
  // exercise drivers, linked into a learner's shared object, use them too.
  const at::Tensor& tensor(const std::string& key) const { return find(tensors, key, "tensor"); }
  int64_t integer(const std::string& key) const { return find(ints, key, "integer"); }
  double real(const std::string& key) const { return find(reals, key, "real"); }
  const std::string& string(const std::string& key) const { return find(strings, key, "string"); }
  int64_t integer_or(const std::string& key, int64_t fallback) const {
    auto found = ints.find(key);
    return found == ints.end() ? fallback : found->second;
  }
  std::string string_or(const std::string& key, const std::string& fallback) const {
    auto found = strings.find(key);
    return found == strings.end() ? fallback : found->second;
  }

 private:
  template <typename Map>
  static const typename Map::mapped_type& find(const Map& map, const std::string& key, const char* kind) {
    auto found = map.find(key);
    if (found == map.end()) throw WireError(std::string("missing ") + kind + " '" + key + "'");
    return found->second;
  }
};

// Tensors are sent as contiguous CPU data; only these dtypes cross the channel.
inline bool is_wire_dtype(at::ScalarType type) {
  return type == at::kFloat || type == at::kDouble || type == at::kLong || type == at::kBool;
}

// The floating dtype a case runs in, by its name in exercise.yaml (the
// loader accepts only these names); float64 when none is given. Tensors of
// the narrow dtypes cross the channel as float64 (see driver_api.h).
inline at::ScalarType floating_dtype(const std::string& name) {
  if (name == "float32") return at::kFloat;
  if (name == "bfloat16") return at::kBFloat16;
  if (name == "float16") return at::kHalf;
  return at::kDouble;
}

// The runner writes this before any learner code is loaded, then before each
// case kCaseStarted and the case's index in the request, one line ("CASE 3\n"),
// then one message with every result.
inline const std::string kRunnerReady = "RUNNER-READY\n";
inline const std::string kCaseStarted = "CASE ";

// What the runner wrote on its result channel, taken apart: whether it
// started, the last case it began (what was running when a limit stopped
// it), and the message after the markers (empty when it never got that far).
struct RunnerStream {
  bool ready = false;
  std::optional<size_t> last_started;
  std::string results;
};
RunnerStream split_runner_stream(const std::string& bytes);
// The same read off the front of the stream as it arrives, without copying:
// how many markers (ready, then one per case) came whole, the last case
// begun, and where whatever follows them starts (bytes.size() when nothing
// does); `marker_cut`: what follows is a marker's first bytes, its line not
// yet whole (a read may split it), not the results.
struct RunnerProgress {
  bool ready = false;
  size_t markers = 0;
  std::optional<size_t> last_started;
  size_t rest_at = 0;
  bool marker_cut = false;
};
RunnerProgress runner_progress(const std::string& bytes);
// The runner's last word when the descriptor of its result channel is no
// longer the pipe it was given (learner code replaced it): this line on
// standard error and exit status kExitChannelReplaced, nothing sent.
inline const std::string kChannelReplaced = "grader-runner: the result channel was replaced";
constexpr int kExitChannelReplaced = 75;

std::string encode(const std::vector<Record>& records);
// Every size in the message is checked against the bytes actually present.
std::vector<Record> decode(const std::string& bytes);

}  // namespace grader::wire
