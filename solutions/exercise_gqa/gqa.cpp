// exercise_gqa: model answer.
//
// Grouped-query attention (GQA, Ainslie et al. 2023), as in LLaMA-2/3 and
// Mistral. The comments are the teaching material: each block says what it
// does, why, and which focus point of exercises/exercise_gqa/exercise.yaml it
// is about. Shapes use the usual letters:
//
//   B   batch size        N  sequence length     D  model dimension
//   H   query heads       KV key/value heads     hd = D / H  (head_dim)
//   G = H / KV            query heads per kv head (the group size)
//
// Why GQA exists: when decoding, the keys and values of every past token are
// cached, and the cache (2 * layers * N * KV * hd numbers per sequence), not
// the arithmetic, limits batch size and speed. Keeping H query heads but only
// KV key/value heads shrinks the cache H / KV times; quality stays close to
// full multi-head attention (KV = H), unlike multi-query attention (KV = 1).
#include "gqa.h"

#include <cmath>

// Focus points `kv_projections` and `group_mapping` (the divisibility).
GroupedQueryAttentionImpl::GroupedQueryAttentionImpl(int64_t dim, int64_t num_heads, int64_t num_kv_heads)
    : dim(dim), num_heads(num_heads), num_kv_heads(num_kv_heads), head_dim(num_heads > 0 ? dim / num_heads : 0) {
  // Refuse what cannot be split evenly, here where the cause is known: every
  // query head needs an equal slice of D, and every kv head an equal group of
  // query heads. (Test > 0 first: `x % 0` is undefined behaviour.)
  TORCH_CHECK(num_heads > 0 && dim % num_heads == 0, "dim (", dim, ") must be divisible by num_heads (", num_heads,
              ")");
  TORCH_CHECK(num_kv_heads > 0 && num_heads % num_kv_heads == 0, "num_heads (", num_heads,
              ") must be divisible by num_kv_heads (", num_kv_heads, ")");

  // kv_projections: the saving is in these two shapes. Queries keep all H
  // heads (D outputs); keys and values are projected to only KV heads, so
  // k_proj and v_proj have KV * hd outputs, not D. Expanding the kv heads
  // later costs no parameters: the sharing happens after the projection.
  // Parameter count: 2 * D * D + 2 * D * KV * hd, against 4 * D * D for MHA.
  // No bias, as in LLaMA-style decoders (the interface says so).
  auto linear = [](int64_t in, int64_t out) { return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(false)); };
  q_proj = register_module("q_proj", linear(dim, dim));
  k_proj = register_module("k_proj", linear(dim, num_kv_heads * head_dim));
  v_proj = register_module("v_proj", linear(dim, num_kv_heads * head_dim));
  out_proj = register_module("out_proj", linear(dim, dim));
}

torch::Tensor GroupedQueryAttentionImpl::forward(const torch::Tensor& x) {
  const auto B = x.size(0), N = x.size(1);
  const auto group = num_heads / num_kv_heads;

  // head_split: split the features into heads, (B, N, heads * hd) ->
  // (B, N, heads, hd) -> transpose -> (B, heads, N, hd). Head h owns the
  // contiguous features h*hd .. (h+1)*hd, as the projection rows are laid out.
  auto heads = [&](const torch::Tensor& t, int64_t count) { return t.view({B, N, count, head_dim}).transpose(1, 2); };
  auto q = heads(q_proj(x), num_heads);     // (B, H, N, hd)
  auto k = heads(k_proj(x), num_kv_heads);  // (B, KV, N, hd)
  auto v = heads(v_proj(x), num_kv_heads);  // (B, KV, N, hd)

  // group_mapping: query heads 0 .. G-1 share kv head 0, heads G .. 2G-1 kv
  // head 1, and so on: query head h reads kv head h / G. That is
  // repeat_interleave along the head axis: [k0, k0, k1, k1] for G = 2.
  // k.repeat({1, G, 1, 1}) gives [k0, k1, k0, k1] instead: same shapes, no
  // error, and every head but the first of each group reads the wrong kv
  // head. The model trains either way, but weights trained (or converted)
  // with one convention are silently wrong under the other.
  //
  // repeat_interleave copies; unsqueeze + expand + reshape is the same
  // mapping (the reshape copies too, once). Fused kernels avoid the copy by
  // indexing kv head h / G directly.
  k = k.repeat_interleave(group, /*dim=*/1);  // (B, H, N, hd)
  v = v.repeat_interleave(group, /*dim=*/1);

  // scaling and softmax: as in multi-head attention, each head's dot product
  // runs over hd features, so divide by sqrt(hd); the weights of one query
  // are a distribution over the keys (the last axis).
  auto scores = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(head_dim));
  auto weights = torch::softmax(scores, /*dim=*/-1);
  auto context = torch::matmul(weights, v);  // (B, H, N, hd)

  // output_projection: merge the heads back exactly as they were split
  // (transpose, then reshape to (B, N, D)), and mix them with out_proj.
  return out_proj(context.transpose(1, 2).reshape({B, N, dim}));
}
