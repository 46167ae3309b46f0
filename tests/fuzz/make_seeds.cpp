// Writes the wire fuzzer's seed inputs: real encoded messages like the ones
// the runner sends (tensors of several dtypes and shapes, operator counts,
// strings), one per file in the folder given.
#include <ATen/ATen.h>

#include <fstream>
#include <string>

#include "runner/op_recorder.h"
#include "wire.h"

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  const std::string dir = argv[1];
  using grader::wire::Record;
  std::vector<std::vector<Record>> messages;
  Record request;
  request.strings["case"] = "masked";
  request.ints["seed"] = 7;
  request.reals["scale"] = 0.125;
  request.tensors["query"] = at::randn({2, 3, 4, 8}, at::kDouble);
  request.tensors["mask"] = at::ones({1, 1, 4, 4}, at::kBool);
  Record response;
  response.strings["case"] = "masked";
  response.strings["error"] = "shape mismatch";
  response.tensors["output"] = at::randn({2, 3, 4, 8});
  response.tensors["weights"] = at::rand({2, 3, 4, 4});
  response.tensors["indices"] = at::arange(5, at::kLong);
  grader::put_op_counts(response, {{"aten::matmul", 2}, {"aten::softmax", 1}, {"x 1\naten::mm", 3}});
  messages.push_back({request});
  messages.push_back({response, response});
  messages.push_back({});
  for (size_t i = 0; i < messages.size(); ++i) {
    std::ofstream(dir + "/seed-" + std::to_string(i), std::ios::binary) << grader::wire::encode(messages[i]);
  }
  return 0;
}
