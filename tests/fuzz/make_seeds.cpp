// Writes the wire fuzzer's seed inputs: real encoded messages like the ones
// the parent and the runner exchange (tensors of every wire dtype and of
// several shapes, scalar, empty and undefined ones included; operator counts
// under "op:<name>" keys; integers, reals and strings), one message per file
// in the folder given. Generated at build time, so no binary is committed.
#include <ATen/ATen.h>

#include <cstdio>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "wire/trace.h"
#include "wire/wire.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s FOLDER\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  at::manual_seed(20261122);  // the same seeds on every build
  using grader::wire::Record;
  std::vector<std::vector<Record>> messages;

  // A request as the parent sends it: inputs of a case.
  Record request;
  request.strings["case"] = "masked";
  request.ints["seed"] = 7;
  request.reals["scale"] = 0.125;
  request.tensors["query"] = at::randn({2, 3, 4, 8}, at::kDouble);
  request.tensors["key"] = at::randn({2, 3, 5, 8}, at::kFloat);
  request.tensors["mask"] = at::rand({1, 1, 4, 5}) > 0.3;
  messages.push_back({request});

  // Responses as the runner sends them, with the operator counts.
  Record response;
  response.strings["case"] = "masked";
  response.tensors["output"] = at::randn({2, 3, 4, 8});
  response.tensors["weights"] = at::rand({2, 3, 4, 4});
  response.tensors["indices"] = at::arange(5, at::kLong);
  grader::wire::Trace trace;
  trace.op_counts = {{"aten::matmul", 2}, {"aten::softmax", 1}, {"aten::div", 1}, {"x 1\naten::mm", 3}};
  trace.device_events = {{grader::wire::DeviceEvent::Kind::mixed, "aten::masked_fill", "aten::ones"},
                         {grader::wire::DeviceEvent::Kind::item, "aten::item", ""}};
  trace.largest_output = grader::wire::LargestOutput{384, "aten::softmax", {2, 3, 4, 4}};
  trace.scope_work = {{96, 24, 96}, {48, 12, 0}};
  trace.heap_growth = 4096;
  trace.recording_intact = true;
  grader::wire::put_trace(response, trace);
  Record failed;
  failed.strings["case"] = "causal";
  failed.strings["error"] = "shape mismatch: [2, 3] vs [3, 2] \xe2\x80\xae";
  grader::wire::Trace cut;
  cut.op_counts = {{"aten::matmul", 0}, {std::string(grader::wire::kMaxOpName + 20, 'n'), 1}};
  grader::wire::put_trace(failed, cut);
  messages.push_back({response, failed});

  // Edge cases of shape and value: scalar, empty, undefined, extremes.
  Record edges;
  edges.tensors["scalar"] = at::scalar_tensor(3.5, at::kDouble);
  edges.tensors["empty"] = at::empty({0, 3}, at::kFloat);
  edges.tensors["undefined"] = at::Tensor();
  edges.tensors["flags"] = at::arange(3, at::kLong).remainder(2).to(at::kBool);
  edges.tensors["eight_dims"] = at::ones({1, 2, 1, 2, 1, 2, 1, 2}, at::kLong);
  edges.ints["min"] = std::numeric_limits<int64_t>::min();
  edges.ints["op:aten::matmul"] = std::numeric_limits<int64_t>::max();
  edges.reals["nan"] = std::numeric_limits<double>::quiet_NaN();
  edges.reals["-inf"] = -std::numeric_limits<double>::infinity();
  edges.strings[""] = "";
  messages.push_back({edges});

  messages.push_back({});         // no records
  messages.push_back({Record()});  // one empty record

  for (size_t i = 0; i < messages.size(); ++i) {
    auto path = dir + "/seed-" + std::to_string(i);
    std::ofstream out(path, std::ios::binary);
    out << grader::wire::encode(messages[i]);
    if (!out) {
      std::fprintf(stderr, "cannot write %s\n", path.c_str());
      return 1;
    }
  }
  return 0;
}
