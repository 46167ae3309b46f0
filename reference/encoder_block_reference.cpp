#include "encoder_block_reference.h"

#include <ATen/ATen.h>

namespace reference {

at::Tensor encoder_block(const at::Tensor& x, const at::Tensor& mask, const std::map<std::string, at::Tensor>& p,
                         int64_t num_heads, const EncoderBlockVariant& variant) {
  TORCH_CHECK(x.dim() == 3, "encoder_block: x must be (B, N, D)");
  const int64_t b = x.size(0), n = x.size(1), d = x.size(2);
  TORCH_CHECK(d % num_heads == 0, "encoder_block: num_heads must divide d_model");
  auto attention = [&](const at::Tensor& input) {
    auto qkv = at::linear(input, p.at("self_attn.in_proj_weight"), p.at("self_attn.in_proj_bias")).chunk(3, -1);
    auto heads = [&](const at::Tensor& t) { return t.reshape({b, n, num_heads, d / num_heads}).transpose(1, 2); };
    SdpaVariant sdpa;
    sdpa.mask_stage = variant.mask_stage;
    auto [out, weights] = scaled_dot_product_attention(heads(qkv[0]), heads(qkv[1]), heads(qkv[2]), mask, sdpa);
    auto result = at::linear(out.transpose(1, 2).reshape({b, n, d}), p.at("self_attn.out_proj.weight"),
                             p.at("self_attn.out_proj.bias"));
    return variant.drop_attention_output ? at::zeros_like(result) : result;
  };
  auto ffn = [&](const at::Tensor& input) {
    FeedForwardVariant v;
    v.activation = variant.activation;
    // linear2 of dropped (zero) hidden activations is its bias.
    auto result = variant.drop_ffn_hidden ? at::zeros_like(input) + p.at("linear2.bias") : feed_forward(input, p, v);
    return variant.drop_ffn_output ? at::zeros_like(result) : result;
  };
  auto norm = [&](const at::Tensor& input, const std::string& name) {
    return at::layer_norm(input, {d}, p.at(name + ".weight"), p.at(name + ".bias"), variant.eps);
  };
  auto residual = [](bool keep, const at::Tensor& input, const at::Tensor& sublayer) {
    return keep ? input + sublayer : sublayer;
  };
  if (variant.pre_ln) {
    auto h = residual(variant.attention_residual, x, attention(norm(x, "norm1")));
    return residual(variant.ffn_residual, h, ffn(norm(h, "norm2")));
  }
  const auto sum = residual(variant.attention_residual, x, attention(x));
  const auto h = norm(sum, "norm1");
  const auto& fed = variant.ffn_input == FfnInput::block_input    ? x
                    : variant.ffn_input == FfnInput::unnormed_sum ? sum
                                                                  : h;
  return norm(residual(variant.ffn_residual, h, ffn(fed)), "norm2");
}

}  // namespace reference
