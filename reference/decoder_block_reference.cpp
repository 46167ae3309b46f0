#include "decoder_block_reference.h"

#include <ATen/ATen.h>

#include "ffn_reference.h"

namespace reference {

at::Tensor decoder_block(const at::Tensor& x, const at::Tensor& memory, const at::Tensor& memory_mask,
                         const std::map<std::string, at::Tensor>& p, int64_t num_heads,
                         const DecoderBlockVariant& variant) {
  TORCH_CHECK(x.dim() == 3 && memory.dim() == 3, "decoder_block: x and memory must be (B, N, D) and (B, M, D)");
  const int64_t b = x.size(0), n = x.size(1), d = x.size(2), m = memory.size(1);
  TORCH_CHECK(d % num_heads == 0, "decoder_block: num_heads must divide d_model");
  // Multi-head attention with packed projections, as torch::nn::MultiheadAttention holds them.
  auto attention = [&](const std::string& name, const at::Tensor& query, const at::Tensor& source,
                       const at::Tensor& mask, MaskStage stage) {
    const auto& w = p.at(name + ".in_proj_weight");
    const auto& bias = p.at(name + ".in_proj_bias");
    auto q = at::linear(query, w.narrow(0, 0, d), bias.narrow(0, 0, d));
    auto k = at::linear(source, w.narrow(0, d, d), bias.narrow(0, d, d));
    auto v = at::linear(source, w.narrow(0, 2 * d, d), bias.narrow(0, 2 * d, d));
    auto heads = [&](const at::Tensor& t) {
      return t.reshape({b, t.size(1), num_heads, d / num_heads}).transpose(1, 2);
    };
    SdpaVariant sdpa;
    sdpa.mask_stage = stage;
    auto out = std::get<0>(scaled_dot_product_attention(heads(q), heads(k), heads(v), mask, sdpa));
    return at::linear(out.transpose(1, 2).reshape({b, query.size(1), d}), p.at(name + ".out_proj.weight"),
                      p.at(name + ".out_proj.bias"));
  };
  const auto options = at::TensorOptions().dtype(at::kBool).device(x.device());
  // 1 where a query may attend: key j <= query i.
  auto causal = at::ones({n, n}, options).tril();
  if (variant.causal_inverted) causal = causal.logical_not();
  auto self = [&](const at::Tensor& input) {
    at::Tensor out;
    if (variant.causal_bool_added) {
      out = attention("self_attn", input, input, at::ones({n, n}, options).triu(1), MaskStage::added);
    } else if (variant.causal || variant.causal_inverted) {
      out = attention("self_attn", input, input, causal, MaskStage::before_softmax);
    } else {
      out = attention("self_attn", input, input, at::Tensor(), MaskStage::before_softmax);
    }
    return variant.drop_self_output ? at::zeros_like(out) : out;
  };
  auto cross = [&](const at::Tensor& input) {
    const auto& source = variant.cross_from_self ? input : memory;
    at::Tensor mask = memory_mask;
    auto stage = variant.memory_mask_stage;
    if (variant.causal_on_cross) {
      // Top-left aligned (N, M): query i sees memory positions 0..i.
      auto top_left = at::ones({n, source.size(1)}, options).tril();
      if (mask.defined() && stage == MaskStage::before_softmax) {
        mask = mask.to(at::kBool).logical_and(top_left);
      } else if (!mask.defined() || stage == MaskStage::ignored) {
        mask = top_left;
        stage = MaskStage::before_softmax;
      }
    }
    if (variant.cross_from_self && mask.defined() && mask.size(-1) != n) {
      mask = at::Tensor();  // the memory's mask does not fit x's keys: nothing to replay it with
      stage = MaskStage::before_softmax;
    }
    auto out = attention("multihead_attn", input, source, mask, stage);
    return variant.drop_cross_output ? at::zeros_like(out) : out;
  };
  auto ffn = [&](const at::Tensor& input) {
    auto result = variant.drop_ffn_hidden ? at::zeros_like(input) + p.at("linear2.bias") : feed_forward(input, p, FeedForwardVariant{variant.activation});
    return variant.drop_ffn_output ? at::zeros_like(result) : result;
  };
  auto norm = [&](const at::Tensor& input, const std::string& name) {
    return at::layer_norm(input, {d}, p.at(name + ".weight"), p.at(name + ".bias"), 1e-5);
  };
  (void)m;
  if (variant.pre_ln) {
    auto h = x + self(norm(x, "norm1"));
    auto c = variant.cross_residual ? h + cross(norm(h, "norm2")) : cross(norm(h, "norm2"));
    return c + ffn(norm(c, "norm3"));
  }
  auto h = norm(x + self(x), "norm1");
  auto c = norm(variant.cross_residual ? h + cross(h) : cross(h), "norm2");
  return norm(c + ffn(c), "norm3");
}

}  // namespace reference
