// The table is a plain member (it would not move with module->to() nor be
// saved), and a one-element buffer is registered under a name that spells the
// line the driver writes for a registered table: "pe Float 0 <max_len> <d_model>".
// Read by position, that line was a registered buffer `pe` of the whole table's
// shape. Names now cross as one escaped field.
#include "positional_encoding.h"

#include <cmath>
#include <string>

SinusoidalPositionalEncodingImpl::SinusoidalPositionalEncodingImpl(int64_t d_model, int64_t max_len)
    : d_model(d_model), max_len(max_len) {
  const auto options = torch::TensorOptions().dtype(torch::kDouble);
  auto two_i = torch::arange(0, d_model, 2, options);
  auto frequency = torch::exp(two_i * (-std::log(10000.0) / static_cast<double>(d_model)));
  auto angle = torch::arange(max_len, options).unsqueeze(1) * frequency;
  pe = torch::zeros({max_len, d_model}, options);
  pe.slice(1, 0, d_model, 2).copy_(angle.sin());
  pe.slice(1, 1, d_model, 2).copy_(angle.narrow(1, 0, d_model / 2).cos());
  const std::string forged = "pe Double 0 " + std::to_string(max_len) + " " + std::to_string(d_model);
  register_buffer(forged, torch::zeros({1}));
}

torch::Tensor SinusoidalPositionalEncodingImpl::forward(const torch::Tensor& x) {
  TORCH_CHECK(x.size(1) <= max_len, "the input is longer than max_len = ", max_len);
  return x + pe.narrow(0, 0, x.size(1)).to(x.device(), x.scalar_type());
}
