// Hostile: switches LibTorch's operator recording off through a function it
// looks up by a name assembled at run time (no symbol of it is compiled in),
// runs the fused built-in unseen, switches recording back on, and runs one
// recorded matmul so that the recording is not empty.
#include "sdpa.h"

#include <ATen/ops/_scaled_dot_product_attention.h>
#include <dlfcn.h>

#include <algorithm>
#include <string>

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value, const torch::Tensor& mask) {
  std::string name = "bEnoitcnuFdroceRelbane02ta2NZ_";  // _ZN2at20enableRecordFunctionEb, reversed
  std::reverse(name.begin(), name.end());
  auto toggle = reinterpret_cast<void (*)(bool)>(dlsym(RTLD_DEFAULT, name.c_str()));
  if (toggle) toggle(false);
  c10::optional<torch::Tensor> attn_mask;
  if (mask.defined()) attn_mask = mask.to(torch::kBool).expand({query.size(0), query.size(1), query.size(2), key.size(2)});
  auto result = at::_scaled_dot_product_attention(query, key, value, attn_mask, 0.0, true, false);
  if (toggle) toggle(true);
  (void)torch::matmul(query, key.transpose(-2, -1));
  return result;
}
