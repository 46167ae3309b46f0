// Child side of exercise_sdpa: calls the learner's scaled_dot_product_attention
// on the tensors the parent sent and returns what it produced.
//
// Request:  query, key, value, [mask], [grad_output, grad_weights]
// Response: output, weights, [grad.query, grad.key, grad.value]
#include "runner/driver_api.h"
#include "sdpa.h"

extern "C" void grader_run_case(const grader::wire::Record& request, grader::wire::Record& response) {
  using grader::driver::put_tensor;
  const bool want_grad = request.integer_or("grad", 0) != 0;
  // Private copies: what the learner does to its inputs stays with it.
  auto query = request.tensor("query").clone().requires_grad_(want_grad);
  auto key = request.tensor("key").clone().requires_grad_(want_grad);
  auto value = request.tensor("value").clone().requires_grad_(want_grad);
  at::Tensor mask = request.has_tensor("mask") ? request.tensor("mask").clone() : at::Tensor();

  auto [output, weights] = scaled_dot_product_attention(query, key, value, mask);
  put_tensor(response, "output", output);
  put_tensor(response, "weights", weights);
  if (!want_grad) return;

  TORCH_CHECK(output.defined() && output.requires_grad(),
              "the output is not connected to query, key and value in the autograd graph");
  TORCH_CHECK(output.sizes() == request.tensor("grad_output").sizes(), "the output has shape ", output.sizes(),
              ", expected ", request.tensor("grad_output").sizes());
  output.backward(request.tensor("grad_output").to(output.scalar_type()));
  put_tensor(response, "grad.query", query.grad());
  put_tensor(response, "grad.key", key.grad());
  put_tensor(response, "grad.value", value.grad());
}
