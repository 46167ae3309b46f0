// Wrong: the padding mask squeezed to (B, Nk) and unsqueezed back; with a batch
// of one, squeeze() also drops the batch axis and the mask lands on the heads.
#include "mha.h"

#include <cmath>
#include <limits>

// Focus points `projections`, `head_split`, `output_projection`.
MultiHeadAttentionImpl::MultiHeadAttentionImpl(int64_t d_model, int64_t num_heads)
    : d_model(d_model), num_heads(num_heads), d_k(num_heads > 0 ? d_model / num_heads : 0) {
  // head_split: each head owns an equal slice of d_k features. With a
  // remainder, the integer division above would quietly drop features and
  // the view in forward() would fail later with a message about sizes that
  // hides the cause. Say it here instead. num_heads > 0 comes first, because
  // `d_model % 0` is undefined behaviour in C++.
  TORCH_CHECK(num_heads > 0, "MultiHeadAttention: num_heads must be positive, got ", num_heads);
  TORCH_CHECK(d_model % num_heads == 0, "MultiHeadAttention: d_model (", d_model,
              ") must be divisible by num_heads (", num_heads, ")");

  // projections: one Linear(D, D) per role. Its D x D weight is the H per-head
  // (d_k x D) matrices stacked: rows h*d_k .. (h+1)*d_k - 1 belong to head h.
  // One large matmul does the work of H small ones, and the head split in
  // forward() reads the output in exactly that layout.
  //
  // register_module makes each layer a child of this module, so parameters(),
  // to(dtype), train()/eval() and state loading reach it. The names are part of
  // the interface: the grader loads "q_linear.weight", "q_linear.bias", ...
  q_linear = register_module("q_linear", torch::nn::Linear(d_model, d_model));
  k_linear = register_module("k_linear", torch::nn::Linear(d_model, d_model));
  v_linear = register_module("v_linear", torch::nn::Linear(d_model, d_model));

  // output_projection: mixes the concatenated heads; without it every output
  // feature would only ever see one head's result.
  out_linear = register_module("out_linear", torch::nn::Linear(d_model, d_model));
}

torch::Tensor MultiHeadAttentionImpl::forward(const torch::Tensor& query, const torch::Tensor& key,
                                              const torch::Tensor& value, const torch::Tensor& mask) {
  TORCH_CHECK(query.dim() == 3 && query.size(2) == d_model, "MultiHeadAttention: query must be (B, Nq, ",
              d_model, "), got ", query.sizes());
  TORCH_CHECK(key.dim() == 3 && key.sizes() == value.sizes() && key.size(0) == query.size(0) &&
                  key.size(2) == d_model,
              "MultiHeadAttention: key and value must both be (B, Nk, ", d_model, "), got ", key.sizes(), " and ",
              value.sizes());
  const int64_t B = query.size(0);
  // cross_attention: every sequence keeps its own length. The widely copied
  // version takes one `seq_len = query.size(1)` and splits the keys and values
  // with it too; that only works while Nk == Nq, that is, for self-attention.
  const int64_t Nq = query.size(1);
  const int64_t Nk = key.size(1);

  // 1. projections, each from its own input: queries from `query`, keys from
  //    `key`, values from `value`. (In cross-attention `key` and `value` are
  //    usually the same encoder tensor, and `query` is the decoder's.)
  const torch::Tensor q = q_linear(query);  // (B, Nq, D)
  const torch::Tensor k = k_linear(key);    // (B, Nk, D)
  const torch::Tensor v = v_linear(value);  // (B, Nk, D)

  // 2. head_split: (B, N, D) -> view (B, N, H, d_k) -> transpose (B, H, N, d_k).
  //
  //    The view only reinterprets memory. Each token's D features lie in one
  //    row, head h owning features h*d_k .. (h+1)*d_k - 1, so cutting the LAST
  //    axis into (H, d_k) gives element [b, n, h, i] = feature h*d_k + i of
  //    token n, as the weights intend. The transpose then moves the head axis
  //    next to the batch: matmul treats all leading axes as a batch, so one
  //    call multiplies the (N x d_k) matrices of every head of every example.
  //    No loop over heads: the number of operations is the same for 1 head or
  //    64.
  //
  //    view({B, H, N, d_k}) straight away has the right shape and the wrong
  //    contents: it cuts the flat memory into H blocks of N*d_k numbers, so
  //    "head 0" would hold whole tokens rather than d_k features of each token.
  const auto split_heads = [&](const torch::Tensor& t, int64_t length) {
    return t.view({B, length, num_heads, d_k}).transpose(1, 2);
  };
  const torch::Tensor qh = split_heads(q, Nq);  // (B, H, Nq, d_k)
  const torch::Tensor kh = split_heads(k, Nk);  // (B, H, Nk, d_k)
  const torch::Tensor vh = split_heads(v, Nk);  // (B, H, Nk, d_k)

  // 3. scaling: scores[b, h, i, j] = q_i . k_j / sqrt(d_k).
  //
  //    A dot product of two d_k-vectors with roughly unit-variance entries has
  //    variance about d_k. Logits of size sqrt(d_k) push the softmax into
  //    saturation (one weight near 1, the others near 0), where its gradients
  //    vanish. Dividing by sqrt(d_k) brings the variance back to about 1.
  //    Each head's product runs over d_k features, not d_model, so
  //    sqrt(d_model) would flatten the attention too much.
  //
  //    The scale is a C++ double: a tensor times a scalar keeps the tensor's
  //    dtype, so float32 stays float32 and float64 stays float64 (`numerics`).
  const double scale = 1.0 / std::sqrt(static_cast<double>(d_k));
  torch::Tensor scores = torch::matmul(qh, kh.transpose(-2, -1)) * scale;  // (B, H, Nq, Nk)

  // 4. masking: where mask == 0 the query must not see the key.
  //
  //    An undefined tensor means "no mask", so test mask.defined() (calling any
  //    operation on an undefined tensor throws). `mask == 0` works for bool and
  //    integer masks alike; `mask.to(torch::kBool)` would mean the opposite
  //    (true where the mask is 1), the convention of torch::nn::MultiheadAttention,
  //    not this one.
  //
  //    masked_fill broadcasts the mask against the scores the usual way (shapes
  //    aligned from the right), so a (B, 1, 1, Nk) padding mask, an (Nq, Nk)
  //    causal mask and a full (B, H, Nq, Nk) mask all work with the same line.
  //    Do not unsqueeze or reshape the mask yourself: each layout would need
  //    its own rule.
  //
  //    Why -inf: softmax computes exp(s - max) / sum, and exp(-inf) is exactly
  //    0, so a masked key gets exactly zero weight and the remaining weights
  //    still sum to 1. A score of 0 would still get exp(0 - max) of weight; a
  //    large negative number such as -1e9 also underflows to 0 in practice.
  //    Masking must happen BEFORE the softmax: zeroing weights afterwards
  //    leaves rows that no longer sum to 1. (A row whose keys are all masked
  //    gives 0/0 = NaN with -inf; a padding mask never masks every key.)
  if (mask.defined()) {
    // A padding mask (B, 1, 1, Nk) is squeezed to (B, Nk) and given back its head
    // and query axes; other masks broadcast as they are.
    auto m = mask;
    if (mask.dim() == 4 && mask.size(1) == 1 && mask.size(2) == 1) m = mask.squeeze().unsqueeze(1).unsqueeze(1);
    scores = scores.masked_fill(m == 0, -std::numeric_limits<double>::infinity());
  }

  // 5. softmax over the keys, the LAST axis of (B, H, Nq, Nk): each query's
  //    weights form a distribution over the keys. dim = -2 would normalise
  //    over the queries, dim = 1 over the heads. torch::softmax subtracts the
  //    row maximum internally, so large logits do not overflow.
  const torch::Tensor weights = torch::softmax(scores, /*dim=*/-1);

  //    Weighted sum of the values: (B, H, Nq, Nk) @ (B, H, Nk, d_k) -> (B, H, Nq, d_k).
  //    The Nk axes meet here, which is why keys and values must have the same
  //    length as each other, but not as the queries.
  const torch::Tensor context = torch::matmul(weights, vh);

  // 6. Merge the heads: step 2 undone in reverse order, (B, H, Nq, d_k) ->
  //    transpose (B, Nq, H, d_k) -> (B, Nq, D).
  //
  //    contiguous: transpose swaps two strides and moves no data, so the
  //    tensor's memory is still ordered (B, H, Nq, d_k). view() never copies,
  //    and it cannot merge (H, d_k) into one axis when those elements are not
  //    adjacent in memory; it throws "view size is not compatible with input
  //    tensor's size and stride". contiguous() copies into the new order first.
  //    (reshape() does the same in one call: it views when it can and copies
  //    when it must.) Reshaping without the transpose has the right shape and
  //    the wrong contents: it glues rows of different tokens together.
  const torch::Tensor merged = context.transpose(1, 2).contiguous().view({B, Nq, d_model});

  // 7. output_projection. gradients: nothing above detaches a tensor or turns
  //    off autograd, so gradients reach query, key, value and every parameter.
  return out_linear(merged);
}
