// The reference is the judge's yardstick, so it is checked against LibTorch's
// own implementations rather than against our solutions.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/nn/functional/activation.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/transformerlayer.h>
#include <torch/version.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <vector>
#include <map>
#include <tuple>

#include "decoder_block_reference.h"
#include "encoder_block_reference.h"
#include "mini_encoder_reference.h"
#include "mini_gpt_reference.h"
#include "ffn_reference.h"
#include "flash_attention.h"
#include "grouped_query_attention.h"
#include "kv_cache.h"
#include "norm_reference.h"
#include "multi_head_attention.h"
#include "rotary.h"
#include "sinusoidal_encoding.h"
#include "softmax_cuda_reference.h"

namespace {

class Reference : public ::testing::Test {
 protected:
  void SetUp() override { at::manual_seed(1234); }
};

void expect_close(const at::Tensor& want, const at::Tensor& got, double tol = 1e-10) {
  ASSERT_EQ(want.sizes(), got.sizes());
  EXPECT_TRUE(at::allclose(want, got, tol, tol)) << "max abs error " << (want - got).abs().max().item<double>();
}

// LibTorch's fused attention (private in 1.13, public from 2.0).
std::tuple<at::Tensor, at::Tensor> builtin_sdpa(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                                const c10::optional<at::Tensor>& mask) {
#if TORCH_VERSION_MAJOR >= 2
  auto output = at::scaled_dot_product_attention(q, k, v, mask);
  // 2.x returns no weights: derive them from the same definition for comparison.
  auto scores = at::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(q.size(-1)));
  if (mask) scores = scores.masked_fill(mask->logical_not(), -INFINITY);
  return {output, at::softmax(scores, -1)};
#else
  return at::_scaled_dot_product_attention(q, k, v, mask, /*dropout_p=*/0.0, /*need_attn_weights=*/true,
                                           /*is_causal=*/false);
#endif
}

// exercise_layer_norm: the forward against LibTorch's layer_norm and RMSNorm
// written with autograd operators; the closed-form backward against
// autograd's gradients of those, in float64.
TEST_F(Reference, LayerNormForwardAndBackwardMatchLibTorch) {
  for (const double eps : {1e-5, 0.5}) {
    auto x = at::randn({3, 4, 7}, at::kDouble).requires_grad_(true);
    auto weight = at::randn({7}, at::kDouble).requires_grad_(true);
    auto bias = at::randn({7}, at::kDouble).requires_grad_(true);
    auto grad_output = at::randn({3, 4, 7}, at::kDouble);
    auto want = at::layer_norm(x, {7}, weight, bias, eps);
    want.backward(grad_output);
    auto ours = reference::norm_forward(reference::Norm::layer, x.detach(), weight.detach(), bias.detach(), eps);
    expect_close(want.detach(), ours);
    auto grads = reference::norm_backward(reference::Norm::layer, x.detach(), weight.detach(), bias.detach(), eps,
                                          grad_output);
    expect_close(x.grad(), grads.x);
    expect_close(weight.grad(), grads.weight);
    expect_close(bias.grad(), grads.bias);
  }
}

TEST_F(Reference, RmsNormForwardAndBackwardMatchAutograd) {
  for (const double eps : {1e-6, 0.5}) {
    auto x = at::randn({2, 5, 6}, at::kDouble).requires_grad_(true);
    auto weight = at::randn({6}, at::kDouble).requires_grad_(true);
    auto grad_output = at::randn({2, 5, 6}, at::kDouble);
    auto want = x * (x.pow(2).mean(-1, true) + eps).rsqrt() * weight;
    want.backward(grad_output);
    auto ours = reference::norm_forward(reference::Norm::rms, x.detach(), weight.detach(), at::Tensor(), eps);
    expect_close(want.detach(), ours);
    auto grads =
        reference::norm_backward(reference::Norm::rms, x.detach(), weight.detach(), at::Tensor(), eps, grad_output);
    expect_close(x.grad(), grads.x);
    expect_close(weight.grad(), grads.weight);
    EXPECT_FALSE(grads.bias.defined());
  }
}

// Each replayed mistake changes what it says it changes, and only that.
TEST_F(Reference, NormMistakesChangeTheirOwnDirection) {
  auto x = at::randn({2, 3, 8}, at::kDouble);
  auto weight = at::randn({8}, at::kDouble), bias = at::randn({8}, at::kDouble);
  auto grad_output = at::randn({2, 3, 8}, at::kDouble);
  using reference::Norm;
  const auto right = reference::norm_forward(Norm::layer, x, weight, bias, 0.1);
  reference::NormVariant unbiased;
  unbiased.unbiased_variance = true;
  EXPECT_FALSE(at::allclose(right, reference::norm_forward(Norm::layer, x, weight, bias, 0.1, unbiased)));
  // A centred RMSNorm is a LayerNorm without its bias.
  reference::NormVariant centred;
  centred.rms_centred = true;
  expect_close(reference::norm_forward(Norm::layer, x, weight, at::zeros({8}, at::kDouble), 0.1),
               reference::norm_forward(Norm::rms, x, weight, at::Tensor(), 0.1, centred));
  // Backward bends leave the forward alone and move dx, or the parameters' gradients, only.
  const auto grads = reference::norm_backward(Norm::layer, x, weight, bias, 0.1, grad_output);
  reference::NormVariant no_mean;
  no_mean.no_mean_term = true;
  const auto bent = reference::norm_backward(Norm::layer, x, weight, bias, 0.1, grad_output, no_mean);
  EXPECT_FALSE(at::allclose(grads.x, bent.x));
  expect_close(grads.weight, bent.weight);
  reference::NormVariant averaged;
  averaged.param_grads_averaged = true;
  const auto mean_grads = reference::norm_backward(Norm::layer, x, weight, bias, 0.1, grad_output, averaged);
  expect_close(grads.x, mean_grads.x);
  expect_close(grads.bias / 6, mean_grads.bias);
}

// With a forward bend, the parameter gradients are those of the bent forward
// (autograd through it), each forward mistake in turn, both norms: what the
// grader judges a learner's parameter gradients against when its forward
// replays one of them.
TEST_F(Reference, NormParameterGradientsFollowTheBentForward) {
  using reference::Norm;
  using reference::NormVariant;
  const std::vector<std::pair<Norm, bool NormVariant::*>> bends = {
      {Norm::layer, &NormVariant::unbiased_variance}, {Norm::layer, &NormVariant::eps_outside_sqrt},
      {Norm::rms, &NormVariant::eps_outside_sqrt},    {Norm::rms, &NormVariant::rms_centred},
      {Norm::rms, &NormVariant::rms_sum_of_squares}};
  for (const auto& [norm, field] : bends) {
    NormVariant variant;
    variant.*field = true;
    auto x = at::randn({2, 3, 6}, at::kDouble);
    auto weight = at::randn({6}, at::kDouble).requires_grad_(true);
    auto bias = norm == Norm::layer ? at::randn({6}, at::kDouble).requires_grad_(true) : at::Tensor();
    auto grad_output = at::randn({2, 3, 6}, at::kDouble);
    reference::norm_forward(norm, x, weight, bias, 0.1, variant).backward(grad_output);
    const auto grads =
        reference::norm_backward(norm, x, weight.detach(), norm == Norm::layer ? bias.detach() : bias, 0.1,
                                 grad_output, variant);
    expect_close(weight.grad(), grads.weight);
    if (norm == Norm::layer) expect_close(bias.grad(), grads.bias);
  }
}

// exercise_softmax_cuda: the float64 row softmax and its replayed kernel mistakes.
TEST_F(Reference, SoftmaxRowsMatchesLibTorchAndIsStable) {
  auto x = at::randn({5, 37}, at::kDouble);
  expect_close(at::softmax(x, -1), reference::softmax_rows(x));
  // Values near +-1e4 and -inf entries: finite, rows sum to 1, -inf weighs 0.
  auto big = at::randn({4, 9}, at::kDouble) * 3 + 1e4;
  big[0].sub_(2e4);
  big[1][3].fill_(-INFINITY);
  auto y = reference::softmax_rows(big.to(at::kFloat));
  EXPECT_TRUE(y.isfinite().all().item<bool>());
  expect_close(at::ones({4}, at::kDouble), y.sum(-1), 1e-12);
  EXPECT_EQ(y[1][3].item<double>(), 0.0);
}

TEST_F(Reference, SoftmaxRowsReplaysKernelMistakes) {
  auto x = at::randn({3, 600}, at::kDouble);
  reference::SoftmaxCudaVariant no_max;
  no_max.no_max_subtraction = true;
  EXPECT_TRUE(reference::softmax_rows(x * 1e3, no_max).isnan().any().item<bool>());  // inf / inf
  expect_close(at::softmax(x, -1), reference::softmax_rows(x, no_max), 1e-5);       // harmless on small values
  reference::SoftmaxCudaVariant partial;
  partial.partial_block_skipped = 256;  // 600 = 2 * 256 + 88: the last 88 columns never written
  auto y = reference::softmax_rows(x, partial);
  EXPECT_TRUE(y.narrow(1, 512, 88).isnan().all().item<bool>());
  expect_close(at::softmax(x.narrow(1, 0, 512), -1), y.narrow(1, 0, 512));
  reference::SoftmaxCudaVariant first;
  first.first_block_only = 256;
  y = reference::softmax_rows(x, first);
  EXPECT_TRUE(y.narrow(1, 256, 344).isnan().all().item<bool>());
  expect_close(at::softmax(x.narrow(1, 0, 256), -1), y.narrow(1, 0, 256));
  expect_close(at::softmax(x.narrow(1, 0, 200), -1), reference::softmax_rows(x.narrow(1, 0, 200), first));
}

TEST_F(Reference, SdpaMatchesLibTorchWithoutMask) {
  auto q = at::randn({2, 3, 5, 8}, at::kDouble), k = at::randn({2, 3, 7, 8}, at::kDouble),
       v = at::randn({2, 3, 7, 4}, at::kDouble);
  auto [want_out, want_w] = builtin_sdpa(q, k, v, c10::nullopt);
  auto [out, w] = reference::scaled_dot_product_attention(q, k, v);
  expect_close(want_out, out);
  expect_close(want_w, w);
}

TEST_F(Reference, SdpaMatchesLibTorchWithBoolMask) {
  auto q = at::randn({2, 3, 6, 8}, at::kDouble), k = at::randn({2, 3, 6, 8}, at::kDouble),
       v = at::randn({2, 3, 6, 8}, at::kDouble);
  auto causal = at::ones({6, 6}, at::kBool).tril();
  auto [want_out, want_w] = builtin_sdpa(q, k, v, causal);
  auto [out, w] = reference::scaled_dot_product_attention(q, k, v, causal);
  expect_close(want_out, out);
  expect_close(want_w, w);
  // Integer masks follow the same convention: 0 means "do not attend".
  auto [int_out, int_w] = reference::scaled_dot_product_attention(q, k, v, causal.to(at::kLong));
  expect_close(out, int_out);
  EXPECT_TRUE(int_w.masked_select(causal.logical_not().expand_as(int_w)).eq(0).all().item<bool>());
}

// The causal exercise's reference is this function with a tril() mask: it
// must equal attention computed prefix by prefix (no mask at all), and its
// earlier rows must not move, even by rounding, when later tokens change.
TEST_F(Reference, CausalMaskEqualsPrefixAttention) {
  const int64_t n = 7;
  auto q = at::randn({2, 3, n, 8}, at::kDouble), k = at::randn({2, 3, n, 8}, at::kDouble),
       v = at::randn({2, 3, n, 5}, at::kDouble);
  auto [out, w] = reference::scaled_dot_product_attention(q, k, v, at::ones({n, n}, at::kBool).tril());
  for (int64_t i = 0; i < n; ++i) {
    auto row = at::softmax(at::matmul(q.narrow(2, i, 1), k.narrow(2, 0, i + 1).transpose(-2, -1)) / std::sqrt(8.0), -1);
    expect_close(row, w.narrow(2, i, 1).narrow(3, 0, i + 1));
    EXPECT_TRUE(w.narrow(2, i, 1).narrow(3, i + 1, n - i - 1).eq(0).all().item<bool>());
    expect_close(at::matmul(row, v.narrow(2, 0, i + 1)), out.narrow(2, i, 1));
  }
  auto k2 = k.clone(), v2 = v.clone(), q2 = q.clone();
  for (auto* t : {&q2, &k2, &v2}) t->narrow(2, 4, n - 4).normal_();
  auto [out2, w2] = reference::scaled_dot_product_attention(q2, k2, v2, at::ones({n, n}, at::kBool).tril());
  EXPECT_TRUE(out.narrow(2, 0, 4).equal(out2.narrow(2, 0, 4)));
  EXPECT_TRUE(w.narrow(2, 0, 4).equal(w2.narrow(2, 0, 4)));
}

// The positional encoding against the paper's formula written with pow, one
// element at a time, for an even and an odd width.
TEST_F(Reference, PositionalEncodingFollowsThePaper) {
  for (int64_t d : {6, 7}) {
    auto table = reference::sinusoidal_table(30, d);
    ASSERT_EQ(table.sizes(), at::IntArrayRef({30, d}));
    for (int64_t pos = 0; pos < 30; ++pos) {
      for (int64_t c = 0; c < d; ++c) {
        const double angle = static_cast<double>(pos) / std::pow(10000.0, 2.0 * static_cast<double>(c / 2) / d);
        EXPECT_NEAR(table[pos][c].item<double>(), c % 2 == 0 ? std::sin(angle) : std::cos(angle), 1e-12)
            << "pos " << pos << " channel " << c << " of " << d;
      }
    }
  }
  auto x = at::randn({2, 5, 6}, at::kDouble);
  expect_close(x + reference::sinusoidal_table(5, 6).unsqueeze(0), reference::add_positional_encoding(x));
  // Every mistake variant gives another table.
  for (auto bend : std::vector<void (*)(reference::PositionalEncodingVariant&)>{
           [](auto& v) { v.sin_cos_swapped = true; }, [](auto& v) { v.halves = true; },
           [](auto& v) { v.exponent_without_2 = true; }, [](auto& v) { v.log10_base = true; },
           [](auto& v) { v.first_position = 1; }}) {
    reference::PositionalEncodingVariant variant;
    bend(variant);
    EXPECT_FALSE(at::allclose(reference::sinusoidal_table(30, 6), reference::sinusoidal_table(30, 6, variant)));
  }
}

// RoPE against the complex-number form: each pair (x_i, x_{i+d/2}) is the
// complex number x_i + j x_{i+d/2}, turned by multiplying with exp(j p theta_i),
// theta_i written with std::pow; then its two defining properties.
TEST_F(Reference, RopeIsTheComplexRotation) {
  const int64_t B = 2, H = 3, N = 5, d = 8, half = d / 2, offset = 7;
  auto x = at::randn({B, H, N, d}, at::kDouble);
  auto angles = at::empty({N, half}, at::kDouble);
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t i = 0; i < half; ++i) {
      angles[n][i] = static_cast<double>(offset + n) * std::pow(10000.0, -2.0 * static_cast<double>(i) / d);
    }
  }
  auto turned = at::complex(x.slice(-1, 0, half), x.slice(-1, half, d)) * at::polar(at::ones_like(angles), angles);
  expect_close(at::cat({at::real(turned), at::imag(turned)}, -1), reference::apply_rope(x, offset));
  // Lengths are kept, token by token.
  expect_close(x.norm(2, -1), reference::apply_rope(x, offset).norm(2, -1));
  // The scores depend on the positions' difference only: shifting both offsets changes nothing.
  auto q = at::randn({B, H, 4, d}, at::kDouble), k = at::randn({B, H, 6, d}, at::kDouble);
  auto v = at::randn({B, H, 6, 4}, at::kDouble);
  auto [out, weights] = reference::rope_attention(q, k, v, 3, 5);
  auto [shifted_out, shifted_weights] = reference::rope_attention(q, k, v, 103, 105);
  expect_close(weights, shifted_weights);
  expect_close(out, shifted_out);
  // ... and it is attention on the rotated query and key, with value as it is.
  auto [plain, plain_weights] = reference::scaled_dot_product_attention(
      reference::apply_rope(q, 3), reference::apply_rope(k, 5), v);
  expect_close(plain, out);
  expect_close(plain_weights, weights);
  // Every mistake variant gives other results on a decoding-like case: in the
  // attention or, for a shift of every position (invisible to attention by the
  // property above), in the rotated query.
  using Bend = void (*)(reference::RopeAttentionVariant&);
  for (Bend bend : std::vector<Bend>{
           [](auto& v) { v.rope.interleaved = true; }, [](auto& v) { v.rope.reversed = true; },
           [](auto& v) { v.rope.sin_cos_swapped = true; }, [](auto& v) { v.rope.exponent = 1.0; },
           [](auto& v) { v.rope.position_shift = 1; }, [](auto& v) { v.rope.offset_ignored = true; },
           [](auto& v) { v.value_rotated = true; }, [](auto& v) { v.not_rotated = true; },
           [](auto& v) { v.query_offset_for_keys = true; }}) {
    reference::RopeAttentionVariant variant;
    bend(variant);
    auto [bent, bent_weights] = reference::rope_attention(q, k, v, 3, 5, variant);
    EXPECT_FALSE(at::allclose(out, bent) &&
                 at::allclose(reference::apply_rope(q, 3), reference::apply_rope(q, 3, variant.rope)));
  }
}

// The FFN against LibTorch's own Linear and GELU (exact and tanh forms).
TEST_F(Reference, FeedForwardMatchesLibTorch) {
  torch::nn::Linear linear1(8, 32), linear2(32, 8);
  linear1->to(at::kDouble);
  linear2->to(at::kDouble);
  std::map<std::string, at::Tensor> parameters = {{"linear1.weight", linear1->weight},
                                                  {"linear1.bias", linear1->bias},
                                                  {"linear2.weight", linear2->weight},
                                                  {"linear2.bias", linear2->bias}};
  auto x = at::randn({2, 5, 8}, at::kDouble);
  at::NoGradGuard no_grad;
  expect_close(linear2(at::gelu(linear1(x))), reference::feed_forward(x, parameters));
  reference::FeedForwardVariant tanh_form;
  tanh_form.activation = reference::Activation::gelu_tanh;
  expect_close(linear2(at::gelu(linear1(x), "tanh")), reference::feed_forward(x, parameters, tanh_form));
  reference::FeedForwardVariant relu;
  relu.activation = reference::Activation::relu;
  expect_close(linear2(at::relu(linear1(x))), reference::feed_forward(x, parameters, relu));
}

// The encoder block against LibTorch's TransformerEncoderLayer (post-LN, GELU,
// eval mode), with and without a padding mask; pre-LN differs from it.
TEST_F(Reference, EncoderBlockMatchesTransformerEncoderLayer) {
  const int64_t b = 2, n = 5, d = 8, h = 2, f = 16;
  torch::nn::TransformerEncoderLayer layer(
      torch::nn::TransformerEncoderLayerOptions(d, h).dim_feedforward(f).dropout(0.1).activation(torch::kGELU));
  layer->to(at::kDouble);
  layer->eval();
  std::map<std::string, at::Tensor> parameters;
  for (const auto& item : layer->named_parameters()) parameters[item.key()] = item.value().detach();
  auto x = at::randn({b, n, d}, at::kDouble);
  auto keep = at::ones({b, n}, at::kBool);
  keep[1][3] = false;
  keep[1][4] = false;
  at::NoGradGuard no_grad;
  for (bool masked : {false, true}) {
    auto want = layer->forward(x.transpose(0, 1), {}, masked ? keep.logical_not() : at::Tensor()).transpose(0, 1);
    auto got = reference::encoder_block(x, masked ? keep.view({b, 1, 1, n}) : at::Tensor(), parameters, h);
    expect_close(want, got);
  }
  reference::EncoderBlockVariant pre_ln;
  pre_ln.pre_ln = true;
  EXPECT_FALSE(at::allclose(reference::encoder_block(x, {}, parameters, h),
                            reference::encoder_block(x, {}, parameters, h, pre_ln)));
}

// The decoder block against LibTorch's TransformerDecoderLayer (post-LN, GELU,
// eval mode): the causal mask on self-attention, the memory's padding mask on
// cross-attention; and each of its four dropouts at p = 1 in training mode.
TEST_F(Reference, DecoderBlockMatchesTransformerDecoderLayer) {
  const int64_t b = 2, n = 4, m = 6, d = 8, h = 2, f = 16;
  torch::nn::TransformerDecoderLayer layer(
      torch::nn::TransformerDecoderLayerOptions(d, h).dim_feedforward(f).dropout(0.0).activation(torch::kGELU));
  layer->to(at::kDouble);
  layer->eval();
  std::map<std::string, at::Tensor> parameters;
  for (const auto& item : layer->named_parameters()) parameters[item.key()] = item.value().detach();
  auto x = at::randn({b, n, d}, at::kDouble), memory = at::randn({b, m, d}, at::kDouble);
  auto keep = at::ones({b, m}, at::kBool);
  keep[1][4] = false;
  keep[1][5] = false;
  // LibTorch's C++ MultiheadAttention adds attn_mask to the scores: -inf where
  // a query may not attend. A bool mask is added as 0/1 (the variant
  // causal_bool_added replays that).
  auto future = at::full({n, n}, -INFINITY, at::kDouble).triu(1);
  at::NoGradGuard no_grad;
  auto run = [&] {
    return layer->forward(x.transpose(0, 1), memory.transpose(0, 1), future, {}, {}, keep.logical_not()).transpose(0, 1);
  };
  expect_close(run(), reference::decoder_block(x, memory, keep.view({b, 1, 1, m}), parameters, h));
  layer->train();
  std::vector<std::pair<torch::nn::Dropout, bool reference::DecoderBlockVariant::*>> sites = {
      {layer->dropout1, &reference::DecoderBlockVariant::drop_self_output},
      {layer->dropout2, &reference::DecoderBlockVariant::drop_cross_output},
      {layer->dropout, &reference::DecoderBlockVariant::drop_ffn_hidden},
      {layer->dropout3, &reference::DecoderBlockVariant::drop_ffn_output}};
  for (auto [module, flag] : sites) {
    for (auto& [other, unused] : sites) other->options.p(0.0);
    module->options.p(1.0);
    reference::DecoderBlockVariant variant;
    variant.*flag = true;
    expect_close(run(), reference::decoder_block(x, memory, keep.view({b, 1, 1, m}), parameters, h, variant));
  }
  // The replayed mistakes each change the result.
  std::vector<bool reference::DecoderBlockVariant::*> bends = {
      &reference::DecoderBlockVariant::causal_on_cross, &reference::DecoderBlockVariant::cross_from_self,
      &reference::DecoderBlockVariant::pre_ln};
  const auto right = reference::decoder_block(x, memory, keep.view({b, 1, 1, m}), parameters, h);
  for (auto bend : bends) {
    reference::DecoderBlockVariant variant;
    variant.*bend = true;
    EXPECT_FALSE(at::allclose(right, reference::decoder_block(x, memory, keep.view({b, 1, 1, m}), parameters, h, variant)));
  }
  reference::DecoderBlockVariant bool_added;
  bool_added.causal_bool_added = true;
  layer->eval();
  auto bool_future = at::ones({n, n}, at::kBool).triu(1);
  expect_close(
      layer->forward(x.transpose(0, 1), memory.transpose(0, 1), bool_future, {}, {}, keep.logical_not()).transpose(0, 1),
      reference::decoder_block(x, memory, keep.view({b, 1, 1, m}), parameters, h, bool_added));
  reference::DecoderBlockVariant no_causal;
  no_causal.causal = false;
  EXPECT_FALSE(at::allclose(right, reference::decoder_block(x, memory, keep.view({b, 1, 1, m}), parameters, h, no_causal)));
}

// Each of the block's three dropouts at p = 1 in training mode (the others at
// 0) against TransformerEncoderLayer with the same Dropout set so: the
// grader's dropout-site probes expect exactly this.
TEST_F(Reference, EncoderBlockDropoutSitesMatchTransformerEncoderLayer) {
  const int64_t b = 2, n = 5, d = 8, h = 2, f = 16;
  torch::nn::TransformerEncoderLayer layer(
      torch::nn::TransformerEncoderLayerOptions(d, h).dim_feedforward(f).dropout(0.0).activation(torch::kGELU));
  layer->to(at::kDouble);
  layer->train();
  std::map<std::string, at::Tensor> parameters;
  for (const auto& item : layer->named_parameters()) parameters[item.key()] = item.value().detach();
  auto x = at::randn({b, n, d}, at::kDouble);
  at::NoGradGuard no_grad;
  std::vector<std::pair<torch::nn::Dropout, bool reference::EncoderBlockVariant::*>> sites = {
      {layer->dropout1, &reference::EncoderBlockVariant::drop_attention_output},
      {layer->dropout, &reference::EncoderBlockVariant::drop_ffn_hidden},
      {layer->dropout2, &reference::EncoderBlockVariant::drop_ffn_output}};
  for (auto [module, flag] : sites) {
    for (auto& [other, unused] : sites) other->options.p(0.0);
    module->options.p(1.0);
    reference::EncoderBlockVariant variant;
    variant.*flag = true;
    expect_close(layer->forward(x.transpose(0, 1)).transpose(0, 1),
                 reference::encoder_block(x, {}, parameters, h, variant));
    EXPECT_FALSE(at::allclose(reference::encoder_block(x, {}, parameters, h),
                              reference::encoder_block(x, {}, parameters, h, variant)));
  }
}

// The mini encoder against LibTorch's Embedding, a stack of distinct
// TransformerEncoderLayers (post-LN, GELU, eval mode), a mean over the real
// tokens and Linear, with and without a padding mask; the padded average differs.
TEST_F(Reference, MiniEncoderMatchesLibTorchModules) {
  const int64_t b = 3, n = 6, v = 11, d = 8, h = 2, f = 16, layers = 3, classes = 4;
  torch::nn::Embedding embedding(v, d);
  torch::nn::Linear classifier(d, classes);
  std::vector<torch::nn::TransformerEncoderLayer> stack;
  std::map<std::string, at::Tensor> parameters;
  for (int64_t i = 0; i < layers; ++i) {
    stack.emplace_back(
        torch::nn::TransformerEncoderLayerOptions(d, h).dim_feedforward(f).dropout(0.1).activation(torch::kGELU));
    stack.back()->to(at::kDouble);
    stack.back()->eval();
    for (const auto& item : stack.back()->named_parameters())
      parameters["layers." + std::to_string(i) + "." + item.key()] = item.value().detach();
  }
  embedding->to(at::kDouble);
  classifier->to(at::kDouble);
  parameters["embedding.weight"] = embedding->weight.detach();
  parameters["classifier.weight"] = classifier->weight.detach();
  parameters["classifier.bias"] = classifier->bias.detach();
  auto tokens = at::randint(v, {b, n}, at::kLong);
  auto keep = at::ones({b, n}, at::kBool);
  keep[1][4] = false;
  keep[1][5] = false;
  keep[2][1] = false;  // padding in the middle too: only the mask says which tokens count
  at::NoGradGuard no_grad;
  // Positions by the formula, written out here.
  auto positions = at::empty({n, d}, at::kDouble);
  for (int64_t pos = 0; pos < n; ++pos) {
    for (int64_t i = 0; i < d; ++i) {
      const double angle = pos / std::pow(10000.0, static_cast<double>(i - i % 2) / d);
      positions[pos][i] = i % 2 == 0 ? std::sin(angle) : std::cos(angle);
    }
  }
  for (bool masked : {false, true}) {
    auto x = (embedding->forward(tokens) * std::sqrt(static_cast<double>(d)) + positions).transpose(0, 1);
    for (auto& layer : stack) x = layer->forward(x, {}, masked ? keep.logical_not() : at::Tensor());
    auto real = (masked ? keep : at::ones_like(keep)).to(at::kDouble).unsqueeze(-1);
    auto pooled = (x.transpose(0, 1) * real).sum(1) / real.sum(1);
    auto got = reference::mini_encoder(tokens, masked ? keep : at::Tensor(), parameters, h, layers);
    expect_close(classifier->forward(pooled), got);
  }
  reference::MiniEncoderVariant padded;
  padded.pooling = reference::Pooling::mean_all;
  EXPECT_FALSE(at::allclose(reference::mini_encoder(tokens, keep, parameters, h, layers),
                            reference::mini_encoder(tokens, keep, parameters, h, layers, padded)));
  // The model's dropout at p = 1: the layers see zeros, so the logits are
  // those of the stack run on zeros (whatever the tokens).
  reference::MiniEncoderVariant dropped;
  dropped.drop_embeddings = true;
  auto zeros = at::zeros({n, b, d}, at::kDouble);
  for (auto& layer : stack) zeros = layer->forward(zeros);
  expect_close(classifier->forward(zeros.transpose(0, 1).mean(1)),
               reference::mini_encoder(tokens, {}, parameters, h, layers, dropped));
}

TEST_F(Reference, SdpaIsStableForLargeLogits) {
  auto q = at::randn({1, 1, 4, 8}, at::kDouble) * 100, k = at::randn({1, 1, 4, 8}, at::kDouble) * 100;
  auto v = at::randn({1, 1, 4, 8}, at::kDouble);
  auto [out, w] = reference::scaled_dot_product_attention(q, k, v);
  EXPECT_TRUE(at::isfinite(out).all().item<bool>());
  expect_close(at::ones({1, 1, 4}, at::kDouble), w.sum(-1));
}

reference::Parameters random_parameters(int64_t dim) {
  reference::Parameters parameters;
  for (const auto& name : reference::mhsa_parameter_names()) {
    bool weight = name.find(".weight") != std::string::npos;
    parameters[name] = weight ? at::randn({dim, dim}, at::kDouble) / std::sqrt(dim) : at::randn({dim}, at::kDouble);
  }
  return parameters;
}

TEST_F(Reference, MhsaMatchesLibTorchMultiHeadAttention) {
  namespace F = torch::nn::functional;
  for (auto [dim, heads] : std::vector<std::pair<int64_t, int64_t>>{{24, 4}, {8, 1}, {4, 4}}) {
    auto x = at::randn({2, 5, dim}, at::kDouble);
    auto p = random_parameters(dim);
    auto in_weight = at::cat({p["q_proj.weight"], p["k_proj.weight"], p["v_proj.weight"]});
    auto in_bias = at::cat({p["q_proj.bias"], p["k_proj.bias"], p["v_proj.bias"]});
    auto seq_first = x.transpose(0, 1);  // LibTorch's layout: (N, B, D)
    auto [want, want_weights] = F::multi_head_attention_forward(
        seq_first, seq_first, seq_first,
        F::MultiheadAttentionForwardFuncOptions(dim, heads, in_weight, in_bias, {}, {}, false, 0.0,
                                                p["out_proj.weight"], p["out_proj.bias"])
            .training(false)
            .need_weights(true)
            .average_attn_weights(false));
    auto got = reference::multi_head_self_attention(x, p, heads);
    expect_close(want.transpose(0, 1), got.output);
    expect_close(want_weights, got.weights);
  }
}

// Cross-attention (Nk != Nq) with a padding mask, against LibTorch's own
// implementation given separate key/value inputs and a key padding mask.
TEST_F(Reference, MhaCrossAttentionMatchesLibTorch) {
  namespace F = torch::nn::functional;
  const int64_t dim = 12, heads = 3, batch = 2, nq = 4, nk = 6;
  auto p = random_parameters(dim);
  auto query = at::randn({batch, nq, dim}, at::kDouble);
  auto key = at::randn({batch, nk, dim}, at::kDouble), value = at::randn({batch, nk, dim}, at::kDouble);
  auto keep = at::ones({batch, 1, 1, nk}, at::kBool);
  keep[0][0][0][5] = false;
  keep[1][0][0][3] = false;
  auto in_weight = at::cat({p["q_proj.weight"], p["k_proj.weight"], p["v_proj.weight"]});
  auto in_bias = at::cat({p["q_proj.bias"], p["k_proj.bias"], p["v_proj.bias"]});
  auto [want, want_weights] = F::multi_head_attention_forward(
      query.transpose(0, 1), key.transpose(0, 1), value.transpose(0, 1),
      F::MultiheadAttentionForwardFuncOptions(dim, heads, in_weight, in_bias, {}, {}, false, 0.0, p["out_proj.weight"],
                                              p["out_proj.bias"])
          .training(false)
          .key_padding_mask(~keep.view({batch, nk}))
          .need_weights(true)
          .average_attn_weights(false));
  auto got = reference::multi_head_attention(query, key, value, keep, p, heads, reference::Projections{});
  expect_close(want.transpose(0, 1), got.output);
  expect_close(want_weights, got.weights);
  // An integer (Nq, Nk) mask and the same bool mask give the same result.
  auto causal = at::ones({nq, nk}, at::kLong).tril(2);
  auto as_int = reference::multi_head_attention(query, key, value, causal, p, heads, reference::Projections{});
  auto as_bool =
      reference::multi_head_attention(query, key, value, causal.to(at::kBool), p, heads, reference::Projections{});
  expect_close(as_int.output, as_bool.output);
}

TEST_F(Reference, MhsaRefusesIndivisibleDim) {
  auto x = at::randn({1, 2, 10}, at::kDouble);
  EXPECT_THROW(reference::multi_head_self_attention(x, random_parameters(10), 3), c10::Error);
}

// Every known mistake must be told apart from the correct answer and from each
// other on the inputs the grader diagnoses with, or a diagnosis could name the
// wrong one.
TEST_F(Reference, SdpaMistakeVariantsAreDistinguishable) {
  auto q = at::randn({2, 4, 5, 8}, at::kDouble), k = at::randn({2, 4, 7, 8}, at::kDouble),
       v = at::randn({2, 4, 7, 3}, at::kDouble);
  auto mask = at::ones({2, 1, 1, 7}, at::kBool);
  mask.index_put_({0, at::indexing::Slice(), at::indexing::Slice(), at::indexing::Slice(5, 7)}, false);
  std::vector<reference::SdpaVariant> variants(1);  // the correct one first
  for (double scale : {1.0, 1.0 / 8, 1.0 / std::sqrt(5.0), 1.0 / std::sqrt(3.0), std::sqrt(8.0)}) {
    variants.emplace_back().scale = scale;
  }
  variants.emplace_back().softmax_dim = -2;
  variants.emplace_back().softmax_dim = 1;
  variants.emplace_back().key_reshaped = true;
  for (auto stage : {reference::MaskStage::after_softmax, reference::MaskStage::inverted, reference::MaskStage::ignored,
                     reference::MaskStage::fill_zero, reference::MaskStage::added}) {
    variants.emplace_back().mask_stage = stage;
  }
  variants.emplace_back().weights_before_softmax = true;
  std::vector<std::pair<at::Tensor, at::Tensor>> results;
  for (const auto& variant : variants) {
    auto [o, w] = reference::scaled_dot_product_attention(q, k, v, mask, variant);
    results.emplace_back(o, w);
  }
  for (size_t i = 0; i < results.size(); ++i) {
    for (size_t j = i + 1; j < results.size(); ++j) {
      bool same = at::allclose(results[i].first, results[j].first, 1e-6, 1e-6, /*equal_nan=*/true) &&
                  at::allclose(results[i].second, results[j].second, 1e-6, 1e-6, /*equal_nan=*/true);
      EXPECT_FALSE(same) << "variants " << i << " and " << j << " cannot be told apart";
    }
  }
}

TEST_F(Reference, MhsaMistakeVariantsAreDistinguishable) {
  const int64_t dim = 24, heads = 4;
  auto x = at::randn({2, 5, dim}, at::kDouble);
  auto p = random_parameters(dim);
  std::vector<reference::MhsaVariant> variants(1);
  for (double scale : {1.0, 1.0 / std::sqrt(24.0), 1.0 / 6, std::sqrt(6.0)})
    variants.emplace_back().attention.scale = scale;
  variants.emplace_back().attention.softmax_dim = -2;
  variants.emplace_back().attention.softmax_dim = 1;
  variants.emplace_back().split = reference::HeadSplit::no_transpose;
  variants.emplace_back().split = reference::HeadSplit::interleaved;
  variants.emplace_back().merge_transposes = false;
  variants.emplace_back().output_projection = false;
  variants.emplace_back().key_uses_query_projection = true;
  variants.emplace_back().value_projection = false;
  std::vector<at::Tensor> outputs;
  for (const auto& variant : variants)
    outputs.push_back(reference::multi_head_self_attention(x, p, heads, variant).output);
  for (size_t i = 0; i < outputs.size(); ++i) {
    for (size_t j = i + 1; j < outputs.size(); ++j) {
      EXPECT_FALSE(at::allclose(outputs[i], outputs[j], 1e-6, 1e-6)) << "variants " << i << " and " << j;
    }
  }
}

std::map<std::string, at::Tensor> gqa_parameters(int64_t dim, int64_t kv_width) {
  const double s = 1 / std::sqrt(static_cast<double>(dim));
  return {{"q_proj.weight", at::randn({dim, dim}, at::kDouble) * s},
          {"k_proj.weight", at::randn({kv_width, dim}, at::kDouble) * s},
          {"v_proj.weight", at::randn({kv_width, dim}, at::kDouble) * s},
          {"out_proj.weight", at::randn({dim, dim}, at::kDouble) * s}};
}

// Written the slow way, one query head at a time: head h takes rows
// h*hd.. of q_proj and the kv head g = h / group's rows of k_proj and v_proj.
TEST_F(Reference, GqaIsPerHeadAttentionOnTheSharedKvHead) {
  for (auto [dim, heads, kv] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{{24, 6, 2}, {24, 6, 3}, {16, 4, 1}}) {
    const int64_t hd = dim / heads, group = heads / kv;
    auto x = at::randn({2, 5, dim}, at::kDouble);
    auto p = gqa_parameters(dim, kv * hd);
    std::vector<at::Tensor> outs;
    for (int64_t h = 0; h < heads; ++h) {
      const int64_t g = h / group;
      auto q = at::matmul(x, p["q_proj.weight"].narrow(0, h * hd, hd).t());
      auto k = at::matmul(x, p["k_proj.weight"].narrow(0, g * hd, hd).t());
      auto v = at::matmul(x, p["v_proj.weight"].narrow(0, g * hd, hd).t());
      auto w = at::softmax(at::matmul(q, k.transpose(1, 2)) / std::sqrt(static_cast<double>(hd)), -1);
      outs.push_back(at::matmul(w, v));
    }
    auto want = at::matmul(at::cat(outs, -1), p["out_proj.weight"].t());
    expect_close(want, reference::grouped_query_attention(x, p, heads, kv).output);
  }
}

// num_kv_heads = num_heads is multi-head attention (zero biases).
TEST_F(Reference, GqaWithAsManyKvHeadsIsMultiHeadAttention) {
  const int64_t dim = 24, heads = 4;
  auto x = at::randn({2, 5, dim}, at::kDouble);
  auto p = gqa_parameters(dim, dim);
  reference::Parameters mhsa = p;
  for (const char* name : {"q_proj", "k_proj", "v_proj", "out_proj"}) {
    mhsa[std::string(name) + ".bias"] = at::zeros({dim}, at::kDouble);
  }
  expect_close(reference::multi_head_self_attention(x, mhsa, heads).output,
               reference::grouped_query_attention(x, p, heads, heads).output);
  EXPECT_THROW(reference::grouped_query_attention(x, p, heads, 3), c10::Error);
}

TEST_F(Reference, GqaMistakeVariantsAreDistinguishable) {
  const int64_t dim = 24, heads = 6, kv = 3;
  auto x = at::randn({2, 5, dim}, at::kDouble);
  auto p = gqa_parameters(dim, kv * dim / heads);
  std::vector<reference::GqaVariant> variants(1);
  for (double scale : {1.0, 1.0 / std::sqrt(24.0), 1.0 / 4}) variants.emplace_back().attention.scale = scale;
  variants.emplace_back().attention.softmax_dim = -2;
  variants.emplace_back().sharing = reference::KvSharing::tiled;
  variants.emplace_back().split_transposes = false;
  variants.emplace_back().merge_transposes = false;
  variants.emplace_back().output_projection = false;
  variants.emplace_back().value_uses_key_projection = true;
  std::vector<at::Tensor> outputs;
  for (const auto& variant : variants) {
    outputs.push_back(reference::grouped_query_attention(x, p, heads, kv, variant).output);
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    for (size_t j = i + 1; j < outputs.size(); ++j) {
      EXPECT_FALSE(at::allclose(outputs[i], outputs[j], 1e-6, 1e-6)) << "variants " << i << " and " << j;
    }
  }
}

// Query by query, key by key: the definition with plain loops and std::exp.
TEST_F(Reference, FlashReferenceIsTheDefinition) {
  const int64_t nq = 5, nk = 9, d = 4;
  auto q = at::randn({1, 1, nq, d}, at::kDouble), k = at::randn({1, 1, nk, d}, at::kDouble),
       v = at::randn({1, 1, nk, 3}, at::kDouble);
  for (bool causal : {false, true}) {
    auto want = at::zeros({1, 1, nq, 3}, at::kDouble);
    for (int64_t i = 0; i < nq; ++i) {
      const int64_t last = causal ? i + nk - nq : nk - 1;
      std::vector<double> e;
      double top = -1e300, total = 0;
      for (int64_t j = 0; j <= last; ++j) {
        e.push_back(at::dot(q[0][0][i], k[0][0][j]).item<double>() / 2.0);
        top = std::max(top, e.back());
      }
      for (auto& x : e) total += (x = std::exp(x - top));
      for (int64_t j = 0; j <= last; ++j) want[0][0][i] += v[0][0][j] * (e[j] / total);
    }
    expect_close(want, reference::flash_reference(q, k, v, causal, 4));
  }
}

// The online recurrence equals the exact softmax for any block size, ragged
// last block, causal or not, queries fewer than keys.
TEST_F(Reference, OnlineSoftmaxEqualsExactAttention) {
  auto q = at::randn({2, 3, 37, 8}, at::kDouble) * 2, k = at::randn({2, 3, 53, 8}, at::kDouble) * 2,
       v = at::randn({2, 3, 53, 5}, at::kDouble);
  for (bool causal : {false, true}) {
    auto exact = reference::flash_reference(q, k, v, causal, 16);
    for (int64_t block : {1, 7, 16, 53, 64}) {
      expect_close(exact, reference::online_softmax_attention(q, k, v, causal, block));
    }
  }
  EXPECT_THROW(reference::flash_reference(k, q, q, true, 16), c10::Error);  // Nq > Nk, causal
}

TEST_F(Reference, FlashMistakeVariantsAreDistinguishable) {
  auto q = at::randn({1, 2, 20, 8}, at::kDouble) * 2, k = at::randn({1, 2, 45, 8}, at::kDouble) * 2,
       v = at::randn({1, 2, 45, 4}, at::kDouble);
  std::vector<reference::FlashVariant> variants(1);
  variants.emplace_back().scale = 1.0;
  variants.emplace_back().scale = 1.0 / 8;
  variants.emplace_back().causal_top_left = true;
  variants.emplace_back().causal_ignored = true;
  variants.emplace_back().stale_accumulator = true;
  variants.emplace_back().stale_sum = true;
  variants.emplace_back().last_block_dropped = true;
  variants.emplace_back().inverted_sum_correction = true;
  variants.emplace_back().inverted_accumulator_correction = true;
  std::vector<at::Tensor> outputs;
  for (const auto& variant : variants) outputs.push_back(reference::flash_reference(q, k, v, true, 16, variant));
  for (size_t i = 0; i < outputs.size(); ++i) {
    for (size_t j = i + 1; j < outputs.size(); ++j) {
      EXPECT_FALSE(at::allclose(outputs[i], outputs[j], 1e-6, 1e-6)) << "variants " << i << " and " << j;
    }
  }
}

// ---- exercise_kv_cache ----

reference::Parameters kv_parameters(int64_t dim) {
  reference::Parameters p;
  for (const char* name : {"q_proj", "k_proj", "v_proj", "out_proj"}) {
    p[std::string(name) + ".weight"] = at::randn({dim, dim}, at::kDouble) / std::sqrt(static_cast<double>(dim));
  }
  return p;
}

// Token by token with the RoPE reference: query n at position n against keys
// 0..n at positions 0..n, per head, heads concatenated and projected.
TEST_F(Reference, KvCausalAttentionIsRopeAttentionTokenByToken) {
  const int64_t dim = 16, heads = 2, hd = dim / heads, n = 6;
  auto x = at::randn({2, n, dim}, at::kDouble);
  auto p = kv_parameters(dim);
  auto heads_of = [&](const char* name) {
    return at::matmul(x, p[std::string(name) + ".weight"].t()).view({2, n, heads, hd}).permute({0, 2, 1, 3});
  };
  auto q = heads_of("q_proj"), k = heads_of("k_proj"), v = heads_of("v_proj");
  std::vector<at::Tensor> rows;
  for (int64_t i = 0; i < n; ++i) {
    auto [out, weights] = reference::rope_attention(q.narrow(2, i, 1), k.narrow(2, 0, i + 1), v.narrow(2, 0, i + 1),
                                                    i, 0);
    rows.push_back(out);  // (B, H, 1, hd)
  }
  auto merged = at::cat(rows, 2).permute({0, 2, 1, 3}).reshape({2, n, dim});
  expect_close(at::matmul(merged, p["out_proj.weight"].t()), reference::causal_self_attention(x, p, heads));
  const auto cache = reference::cache_contents(x, p, heads);
  for (int64_t i = 0; i < n; ++i) {
    expect_close(reference::apply_rope(k.narrow(2, i, 1), i), cache.keys.narrow(2, i, 1));
  }
  expect_close(k, cache.projected_keys);
  expect_close(v, cache.values);
}

// Any schedule of calls, after a previous sequence and a reset or not, gives
// the one-pass result.
TEST_F(Reference, KvCachedDecodingEqualsOnePassForEverySchedule) {
  const int64_t dim = 16, heads = 4, n = 9;
  auto x = at::randn({2, n, dim}, at::kDouble), previous = at::randn({2, 5, dim}, at::kDouble);
  auto p = kv_parameters(dim);
  auto want = reference::causal_self_attention(x, p, heads);
  for (auto [first, step] : std::vector<std::pair<int64_t, int64_t>>{{n, 1}, {1, 1}, {3, 2}, {4, 3}, {2, 100}}) {
    expect_close(want, reference::cached_decoding(x, {}, p, heads, first, step));
    expect_close(want, reference::cached_decoding(x, previous, p, heads, first, step));
  }
}

// A token's output with its query at its own position is the one-pass row;
// at any other position it differs (the measurement of query positions relies on both).
TEST_F(Reference, KvOutputWithQueryAtItsPositionIsTheOnePassRow) {
  const int64_t dim = 16, heads = 4, n = 7;
  auto x = at::randn({2, n, dim}, at::kDouble);
  auto p = kv_parameters(dim);
  auto want = reference::causal_self_attention(x, p, heads);
  for (int64_t token = 0; token < n; ++token) {
    expect_close(want.narrow(1, token, 1), reference::output_with_query_at(x, p, heads, token, token));
    if (token > 0) {
      EXPECT_FALSE(at::allclose(want.narrow(1, token, 1), reference::output_with_query_at(x, p, heads, token, 0)));
    }
  }
}

TEST_F(Reference, KvCacheMistakeVariantsAreDistinguishable) {
  const int64_t dim = 16, heads = 2, n = 8;
  auto x = at::randn({1, n, dim}, at::kDouble), previous = at::randn({1, 3, dim}, at::kDouble);
  auto p = kv_parameters(dim);
  std::vector<reference::KvCacheVariant> variants(1);
  variants.emplace_back().positions_restart = true;
  variants.emplace_back().cache_replaced = true;
  variants.emplace_back().chunk_unmasked = true;
  variants.emplace_back().chunk_mask_top_left = true;
  variants.emplace_back().diagonal_hidden = true;
  variants.emplace_back().diagonal_hidden_first_kept = true;
  variants.emplace_back().diagonal_hidden_first_open = true;
  variants.emplace_back().reset_ignored = true;
  variants.emplace_back().cached_keys_unrotated = true;
  variants.emplace_back().values_rotated = true;
  variants.emplace_back().no_rope = true;
  variants.emplace_back().keys_unrotated = true;
  variants.emplace_back().rope.interleaved = true;
  variants.emplace_back().rope.exponent = 1.0;
  variants.emplace_back().scale = 1.0;
  variants.emplace_back().scale = 1.0 / 8;
  std::vector<at::Tensor> outputs;
  for (const auto& variant : variants) outputs.push_back(reference::cached_decoding(x, previous, p, heads, 3, 2, variant));
  for (size_t i = 0; i < outputs.size(); ++i) {
    for (size_t j = i + 1; j < outputs.size(); ++j) {
      EXPECT_FALSE(at::allclose(outputs[i], outputs[j], 1e-6, 1e-6)) << "variants " << i << " and " << j;
    }
  }
  // Fed in one call from an empty cache, only the mask and scale mistakes show.
  auto one_pass = reference::causal_self_attention(x, p, heads);
  for (size_t i = 1; i < variants.size(); ++i) {
    const bool shows = variants[i].chunk_unmasked || variants[i].diagonal_hidden ||
                       variants[i].diagonal_hidden_first_kept || variants[i].diagonal_hidden_first_open ||
                       variants[i].values_rotated ||
                       variants[i].no_rope || variants[i].keys_unrotated || variants[i].rope.interleaved ||
                       variants[i].rope.exponent != 2.0 || variants[i].scale.has_value();
    EXPECT_EQ(shows, !at::allclose(one_pass, reference::cached_decoding(x, {}, p, heads, n, 1, variants[i]), 1e-9, 1e-9))
        << "variant " << i;
  }
}

}  // namespace

// ---- the small GPT ---------------------------------------------------------

// Parameters of a small GPT drawn at random, by the learner's names.
reference::GptParameters gpt_parameters(int64_t v, int64_t m, int64_t d, int64_t layers) {
  reference::GptParameters p;
  p["tok_emb.weight"] = at::randn({v, d}, at::kDouble) * 0.5;
  p["pos_emb.weight"] = at::randn({m, d}, at::kDouble) * 0.5;
  auto put = [&](const std::string& name, std::vector<int64_t> shape) {
    p[name] = at::randn(shape, at::kDouble) * 0.3;
  };
  for (int64_t l = 0; l < layers; ++l) {
    const auto b = "blocks." + std::to_string(l) + ".";
    for (const char* norm : {"ln1", "ln2"}) {
      p[b + norm + ".weight"] = 1 + at::randn({d}, at::kDouble) * 0.1;
      put(b + norm + ".bias", {d});
    }
    for (const char* proj : {"q_proj", "k_proj", "v_proj", "out_proj"}) {
      put(b + "attn." + proj + ".weight", {d, d});
      put(b + "attn." + proj + ".bias", {d});
    }
    put(b + "fc1.weight", {4 * d, d});
    put(b + "fc1.bias", {4 * d});
    put(b + "fc2.weight", {d, 4 * d});
    put(b + "fc2.bias", {d});
  }
  p["ln_f.weight"] = 1 + at::randn({d}, at::kDouble) * 0.1;
  p["ln_f.bias"] = at::randn({d}, at::kDouble) * 0.1;
  return p;
}

// The same model from LibTorch's modules: Embedding, LayerNorm, Linear and
// MultiheadAttention (its in_proj packing q, k and v; a float attn_mask it adds).
at::Tensor gpt_by_modules(const at::Tensor& tokens, const reference::GptParameters& p, int64_t heads, int64_t layers) {
  torch::NoGradGuard no_grad;
  const int64_t t = tokens.size(1), d = p.at("tok_emb.weight").size(1);
  auto norm = [&](const std::string& name, const at::Tensor& x) {
    torch::nn::LayerNorm ln(torch::nn::LayerNormOptions({d}));
    ln->to(at::kDouble);
    ln->weight.copy_(p.at(name + ".weight"));
    ln->bias.copy_(p.at(name + ".bias"));
    return ln(x);
  };
  auto linear = [&](const std::string& name, const at::Tensor& x) {
    const auto& w = p.at(name + ".weight");
    torch::nn::Linear layer(w.size(1), w.size(0));
    layer->to(at::kDouble);
    layer->weight.copy_(w);
    layer->bias.copy_(p.at(name + ".bias"));
    return layer(x);
  };
  torch::nn::Embedding tok(p.at("tok_emb.weight").size(0), d), pos(p.at("pos_emb.weight").size(0), d);
  tok->to(at::kDouble);
  pos->to(at::kDouble);
  tok->weight.copy_(p.at("tok_emb.weight"));
  pos->weight.copy_(p.at("pos_emb.weight"));
  auto h = tok(tokens) + pos(at::arange(t, at::kLong));
  auto future = at::full({t, t}, -INFINITY, at::kDouble).triu(1);
  for (int64_t l = 0; l < layers; ++l) {
    const auto b = "blocks." + std::to_string(l) + ".";
    torch::nn::MultiheadAttention attention(torch::nn::MultiheadAttentionOptions(d, heads));
    attention->to(at::kDouble);
    attention->in_proj_weight.copy_(at::cat({p.at(b + "attn.q_proj.weight"), p.at(b + "attn.k_proj.weight"),
                                             p.at(b + "attn.v_proj.weight")}));
    attention->in_proj_bias.copy_(
        at::cat({p.at(b + "attn.q_proj.bias"), p.at(b + "attn.k_proj.bias"), p.at(b + "attn.v_proj.bias")}));
    attention->out_proj->weight.copy_(p.at(b + "attn.out_proj.weight"));
    attention->out_proj->bias.copy_(p.at(b + "attn.out_proj.bias"));
    auto x = norm(b + "ln1", h).transpose(0, 1);
    h = h + std::get<0>(attention->forward(x, x, x, at::Tensor(), false, future)).transpose(0, 1);
    h = h + linear(b + "fc2", torch::gelu(linear(b + "fc1", norm(b + "ln2", h))));
  }
  return at::matmul(norm("ln_f", h), p.at("tok_emb.weight").t());
}

TEST_F(Reference, GptLogitsEqualLibTorchModules) {
  const auto p = gpt_parameters(11, 9, 8, 2);
  const auto tokens = at::randint(11, {3, 7}, at::kLong);
  expect_close(gpt_by_modules(tokens, p, 2, 2), reference::gpt_logits(tokens, p, {2, 2}));
}

TEST_F(Reference, GptLogitsAreCausalAndEveryVariantDiffers) {
  const auto p = gpt_parameters(11, 9, 8, 2);
  auto tokens = at::randint(11, {2, 8}, at::kLong);
  const auto right = reference::gpt_logits(tokens, p, {2, 2});
  auto changed = tokens.clone();
  changed.narrow(1, 5, 3).fill_(3);
  expect_close(right.narrow(1, 0, 5), reference::gpt_logits(changed, p, {2, 2}).narrow(1, 0, 5));
  std::vector<std::function<void(reference::GptVariant&)>> bends = {
      [](auto& v) { v.causal = false; },        [](auto& v) { v.pre_ln = false; },
      [](auto& v) { v.final_norm = false; },    [](auto& v) { v.gelu_tanh = true; },
      [](auto& v) { v.positions = false; },     [](auto& v) { v.scale_by_dim = true; },
      [](auto& v) { v.unscaled = true; },
      [](auto& v) {
        v.cached_mask_top_left = true;
        v.first = 3;
        v.step = 2;
      },
      [](auto& v) {
        v.positions_restart = true;
        v.first = 3;
        v.step = 2;
      }};
  for (const auto& bend : bends) {
    reference::GptVariant variant;
    bend(variant);
    EXPECT_GT((reference::gpt_logits(tokens, p, {2, 2}, variant) - right).abs().max().item<double>(), 1e-4);
  }
}

// The sampler's rule written out row by row with the standard library.
std::vector<double> probs_by_hand(std::vector<double> logits, double temperature, int64_t top_k, double top_p) {
  const auto v = logits.size();
  std::vector<size_t> order(v);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return logits[a] > logits[b]; });
  std::vector<double> out(v, 0.0);
  if (temperature == 0) {
    out[order.front()] = 1;
    return out;
  }
  for (auto& x : logits) x /= temperature;
  size_t kept = (top_k > 0 && static_cast<size_t>(top_k) < v) ? static_cast<size_t>(top_k) : v;
  auto softmax_over = [&](size_t n) {
    std::vector<double> q(n);
    double total = 0;
    for (size_t i = 0; i < n; ++i) total += q[i] = std::exp(logits[order[i]] - logits[order[0]]);
    for (auto& x : q) x /= total;
    return q;
  };
  if (top_p < 1) {
    auto q = softmax_over(kept);
    double before = 0;
    size_t n = 0;
    while (n < kept && (n == 0 || before < top_p)) before += q[n++];
    kept = n;
  }
  auto q = softmax_over(kept);
  for (size_t i = 0; i < kept; ++i) out[order[i]] = q[i];
  return out;
}

TEST_F(Reference, NextTokenProbsFollowTheRuleWrittenByHand) {
  const auto logits = at::randn({5, 12}, at::kDouble) * 2;
  for (auto [temperature, top_k, top_p] : std::vector<std::tuple<double, int64_t, double>>{
           {0, 0, 1}, {1, 0, 1}, {0.5, 0, 1}, {1.7, 4, 1}, {1, 0, 0.6}, {0.8, 5, 0.7}, {1, 12, 0.95}, {1, 1, 0.5}}) {
    auto got = reference::next_token_probs(logits, temperature, top_k, top_p);
    for (int64_t row = 0; row < logits.size(0); ++row) {
      auto r = logits[row].contiguous();
      std::vector<double> values(r.data_ptr<double>(), r.data_ptr<double>() + r.numel());
      auto want = probs_by_hand(values, temperature, top_k, top_p);
      expect_close(at::tensor(want, at::kDouble), got[row]);
    }
  }
}

TEST_F(Reference, GenerationIsGreedyAtTemperatureZeroAndReproducibleBySeed) {
  const auto p = gpt_parameters(13, 12, 8, 1);
  const auto prompt = at::randint(13, {2, 3}, at::kLong);
  reference::GenerationSettings greedy{12, 20, 0, 0, 1, 5};
  auto tokens = reference::generate(prompt, p, {2, 1}, greedy);
  ASSERT_EQ(tokens.size(1), 12);  // stops at max_len
  for (int64_t i = 3; i < 12; ++i) {
    auto logits = reference::gpt_logits(tokens.narrow(1, 0, i), p, {2, 1});
    EXPECT_TRUE(at::equal(logits.select(1, i - 1).argmax(-1), tokens.select(1, i)));
  }
  // top_k 1 leaves one token: the same as greedy whatever the draw.
  EXPECT_TRUE(at::equal(tokens, reference::generate(prompt, p, {2, 1}, {12, 20, 0.9, 1, 1, 7})));
  reference::GenerationSettings sampled{12, 6, 1.3, 0, 1, 42};
  auto a = reference::generate(prompt, p, {2, 1}, sampled), b = reference::generate(prompt, p, {2, 1}, sampled);
  EXPECT_TRUE(at::equal(a, b));
  sampled.seed = 43;
  EXPECT_FALSE(at::equal(a, reference::generate(prompt, p, {2, 1}, sampled)));
}
