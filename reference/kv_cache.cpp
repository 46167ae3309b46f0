#include "kv_cache.h"

#include <ATen/ATen.h>

#include <cmath>
#include <limits>
#include <vector>

#include "rotary.h"

namespace reference {
namespace {

// (B, T, D) -> (B, H, T, hd) and back.
at::Tensor split_heads(const at::Tensor& t, int64_t heads) {
  return t.reshape({t.size(0), t.size(1), heads, t.size(2) / heads}).transpose(1, 2);
}
at::Tensor merge_heads(const at::Tensor& t) {
  return t.transpose(1, 2).reshape({t.size(0), t.size(2), t.size(1) * t.size(3)});
}

void check_arguments(const at::Tensor& x, const Parameters& parameters, int64_t num_heads) {
  TORCH_CHECK(x.dim() == 3, "reference kv-cache attention expects x (B, N, D), got ", x.sizes());
  TORCH_CHECK(num_heads > 0 && x.size(2) % num_heads == 0 && (x.size(2) / num_heads) % 2 == 0, "dim ", x.size(2),
              " must split into ", num_heads, " heads of even width");
  for (const char* name : {"q_proj.weight", "k_proj.weight", "v_proj.weight", "out_proj.weight"}) {
    TORCH_CHECK(parameters.count(name), "reference kv-cache attention needs ", name);
  }
}

// Softmax attention of q (B, H, Nq, hd) over k, v (B, H, Nk, hd); visible
// (Nq, Nk) bool or undefined (all visible).
at::Tensor attend(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& visible,
                  double scale) {
  auto scores = at::matmul(q, k.transpose(-2, -1)) * scale;
  if (visible.defined()) scores = scores.masked_fill(visible.logical_not(), -std::numeric_limits<double>::infinity());
  return at::matmul(at::softmax(scores, -1), v);
}

}  // namespace

at::Tensor causal_self_attention(const at::Tensor& x, const Parameters& parameters, int64_t num_heads) {
  check_arguments(x, parameters, num_heads);
  const int64_t n = x.size(1), head_dim = x.size(2) / num_heads;
  auto q = apply_rope(split_heads(at::linear(x, parameters.at("q_proj.weight")), num_heads), 0);
  const auto cache = cache_contents(x, parameters, num_heads);
  auto visible = at::ones({n, n}, x.options().dtype(at::kBool)).tril();
  auto heads = attend(q, cache.keys, cache.values, visible, 1.0 / std::sqrt(static_cast<double>(head_dim)));
  return at::linear(merge_heads(heads), parameters.at("out_proj.weight"));
}

at::Tensor output_with_query_at(const at::Tensor& x, const Parameters& parameters, int64_t num_heads, int64_t token,
                                int64_t position) {
  check_arguments(x, parameters, num_heads);
  TORCH_CHECK(token >= 0 && token < x.size(1), "output_with_query_at: no token ", token);
  const int64_t head_dim = x.size(2) / num_heads;
  auto q = apply_rope(split_heads(at::linear(x.narrow(1, token, 1), parameters.at("q_proj.weight")), num_heads),
                      position);
  const auto cache = cache_contents(x.narrow(1, 0, token + 1), parameters, num_heads);
  auto visible = at::ones({1, token + 1}, x.options().dtype(at::kBool));
  auto heads = attend(q, cache.keys, cache.values, visible, 1.0 / std::sqrt(static_cast<double>(head_dim)));
  return at::linear(merge_heads(heads), parameters.at("out_proj.weight"));
}

CacheContents cache_contents(const at::Tensor& x, const Parameters& parameters, int64_t num_heads) {
  check_arguments(x, parameters, num_heads);
  auto projected = split_heads(at::linear(x, parameters.at("k_proj.weight")), num_heads);
  return {apply_rope(projected, 0), split_heads(at::linear(x, parameters.at("v_proj.weight")), num_heads), projected};
}

at::Tensor cached_decoding(const at::Tensor& x, const at::Tensor& previous, const Parameters& parameters,
                           int64_t num_heads, int64_t first, int64_t step, const KvCacheVariant& variant) {
  check_arguments(x, parameters, num_heads);
  TORCH_CHECK(first >= 1 && step >= 1, "the schedule needs calls of at least one token");
  const int64_t head_dim = x.size(2) / num_heads;
  const double scale = variant.scale.value_or(1.0 / std::sqrt(static_cast<double>(head_dim)));
  at::Tensor k_cache, v_cache;  // as the (possibly mistaken) learner keeps them
  int64_t cached = 0;

  // One call of the module on chunk (B, T, D).
  auto call = [&](const at::Tensor& chunk) {
    const int64_t t = chunk.size(1);
    const int64_t position = variant.positions_restart ? 0 : cached;
    auto rotate = [&](const at::Tensor& t) { return variant.no_rope ? t : apply_rope(t, position, variant.rope); };
    auto q = rotate(split_heads(at::linear(chunk, parameters.at("q_proj.weight")), num_heads));
    auto k_raw = split_heads(at::linear(chunk, parameters.at("k_proj.weight")), num_heads);
    auto k = variant.keys_unrotated ? k_raw : rotate(k_raw);
    auto v = split_heads(at::linear(chunk, parameters.at("v_proj.weight")), num_heads);
    if (variant.values_rotated) v = rotate(v);
    at::Tensor keys, values;
    if (variant.cache_replaced || !k_cache.defined()) {
      keys = k;
      values = v;
    } else {
      keys = at::cat({k_cache, k}, 2);
      values = at::cat({v_cache, v}, 2);
    }
    // What stays in the cache for the next call.
    auto stored_keys = variant.cached_keys_unrotated ? k_raw : k;
    k_cache = variant.cache_replaced || !k_cache.defined() ? stored_keys : at::cat({k_cache, stored_keys}, 2);
    v_cache = values;
    const int64_t total = keys.size(2);
    at::Tensor visible;
    if (!variant.chunk_unmasked && !(variant.chunk_mask_prompt_only && total > t)) {
      auto rows = at::arange(t, x.options().dtype(at::kLong)).unsqueeze(1);
      auto columns = at::arange(total, x.options().dtype(at::kLong)).unsqueeze(0);
      visible = variant.chunk_mask_top_left ? columns <= rows : columns <= rows + (total - t);
      if (variant.diagonal_hidden || variant.diagonal_hidden_first_kept || variant.diagonal_hidden_first_open) {
        visible = columns < rows + (total - t);
      }
      // The sequence's first token, whose row would be empty, let see itself
      // (first_kept), or exempt from the mask, its whole row open (first_open).
      const auto first = rows + (total - t) == 0;
      if (variant.diagonal_hidden_first_kept) visible = visible | (first & (columns == 0));
      if (variant.diagonal_hidden_first_open) visible = visible | first;
    }
    cached += t;
    auto heads = attend(q, keys, values, visible, scale);
    return at::linear(merge_heads(heads), parameters.at("out_proj.weight"));
  };

  if (previous.defined() && previous.size(1) > 0) {
    call(previous);
    if (!variant.reset_ignored) {
      k_cache = v_cache = at::Tensor();
      cached = 0;
    }
  }
  std::vector<at::Tensor> outputs;
  for (int64_t begin = 0; begin < x.size(1);) {
    const int64_t t = std::min(begin == 0 ? first : step, x.size(1) - begin);
    outputs.push_back(call(x.narrow(1, begin, t)));
    begin += t;
  }
  return at::cat(outputs, 1);
}

}  // namespace reference
