// From the round-4 red team: a correct module that also registers a parameter
// under a 250-character name (LibTorch allows it) and uses it (times 0), so it
// gets a gradient. Every parameter's gradient went back under the key
// "grad.param.<name>", longer than a reply key may be: the whole reply was
// refused and the verdict was runtime_error. The driver now reports the
// gradients of the parameters the case loaded, by the grader's names.
#include "mhsa.h"

#include <cmath>

// Focus points `projections`, `head_split`, `dropout`.
//
// Default arguments live only in mhsa.h; repeating them here would not compile.
//
// The constructor parameter `dropout` (a probability, a double) has the same
// name as the member `dropout` (the module). Inside the constructor the bare
// name means the parameter, so the member is reached as `this->dropout`.
// The same shadowing happens for `dim` and `num_heads`, harmlessly: in the
// member initialiser list `dim(dim)` initialises the member from the parameter.
MultiHeadSelfAttentionImpl::MultiHeadSelfAttentionImpl(int64_t dim, int64_t num_heads, double dropout)
    : dim(dim), num_heads(num_heads), head_dim(num_heads > 0 ? dim / num_heads : 0) {
  // head_split: every head gets an equal, contiguous slice of the D features.
  // If H does not divide D, the integer division above silently drops the
  // remainder and the reshape in forward() fails later with a message about
  // shapes that says nothing about the real cause. Refuse it here, where the
  // cause is known, with a message the caller can act on. Check num_heads > 0
  // first: `dim % 0` is undefined behaviour in C++.
  TORCH_CHECK(num_heads > 0, "MultiHeadSelfAttention: num_heads must be positive, got ", num_heads);
  TORCH_CHECK(dim % num_heads == 0, "MultiHeadSelfAttention: dim (", dim,
              ") must be divisible by num_heads (", num_heads, ")");

  // projections: three separate learned maps produce queries, keys and values
  // from the same input; that is what "self"-attention means. Each is a full
  // Linear(D, D) with bias, not H small Linear(D, hd) layers: a single D x D
  // matrix is exactly the H per-head matrices stacked on top of each other
  // (rows h*hd .. (h+1)*hd - 1 belong to head h), and one big matmul is far
  // faster than H small ones. The head split in forward() relies on that
  // layout.
  //
  // register_module makes the layers visible to parameters(), to(), train()
  // and eval(), and to state loading. The names are a contract: the grader
  // copies reference weights into "q_proj.weight", "q_proj.bias", ...
  q_proj = register_module("q_proj", torch::nn::Linear(dim, dim));
  k_proj = register_module("k_proj", torch::nn::Linear(dim, dim));
  v_proj = register_module("v_proj", torch::nn::Linear(dim, dim));

  // output_projection: after the heads are concatenated, out_proj mixes them.
  // Without it each output feature would only ever see one head's result.
  out_proj = register_module("out_proj", torch::nn::Linear(dim, dim));

  // dropout: a registered module, so model.train() / model.eval() switch it
  // on and off together with the rest of the model. Its probability is the
  // constructor argument, never a hard-coded constant.
  this->dropout = register_module("dropout", torch::nn::Dropout(dropout));
  register_parameter(std::string(250, 't'), torch::zeros({1}));
}

torch::Tensor MultiHeadSelfAttentionImpl::forward(const torch::Tensor& x) {
  TORCH_CHECK(x.dim() == 3 && x.size(2) == dim, "MultiHeadSelfAttention: expected input of shape (B, N, ", dim,
              "), got ", x.sizes());
  const int64_t B = x.size(0);
  const int64_t N = x.size(1);

  // 1. projections: (B, N, D) -> (B, N, D), three times, each with its own
  //    weights. Keys must not reuse q_proj (the scores would become a
  //    symmetric bilinear form) and values must not be the raw input.
  const torch::Tensor q = q_proj(x);
  const torch::Tensor k = k_proj(x);
  const torch::Tensor v = v_proj(x);

  // 2. head_split: (B, N, D) -> (B, N, H, hd) -> (B, H, N, hd).
  //
  //    The view only relabels memory. The projection's output is laid out
  //    token by token, each token's D features in a row, and head h owns
  //    features h*hd .. (h+1)*hd - 1 of that row. Splitting the LAST axis into
  //    (H, hd) respects that: element [b, n, h, i] is feature h*hd + i of
  //    token n. (Splitting it as (hd, H) would give head h the strided
  //    features h, h + H, h + 2H, ..., which does not match the weights.)
  //
  //    The transpose then moves heads in front of tokens, so the last two axes
  //    of each (b, h) slice form an N x hd matrix and a single batched matmul
  //    computes all heads at once. No loop over heads: the cost in operators
  //    launched is the same for 1 head or 64.
  //
  //    A tempting shortcut, view({B, H, N, hd}) straight away, has the right
  //    shape but the wrong contents: it cuts the flat memory into H blocks of
  //    N*hd numbers, so "head 0" would hold whole tokens 0 .. N/H - 1 instead
  //    of the first hd features of every token.
  const auto split_heads = [&](const torch::Tensor& t) {
    return t.view({B, N, num_heads, head_dim}).transpose(1, 2);  // (B, H, N, hd)
  };
  const torch::Tensor qh = split_heads(q);
  const torch::Tensor kh = split_heads(k);
  const torch::Tensor vh = split_heads(v);

  // 3. scaling: scores[b, h, i, j] = q_i . k_j / sqrt(hd).
  //
  //    A dot product of two length-hd vectors with roughly unit-variance
  //    entries has variance about hd, so its typical size grows like
  //    sqrt(hd). Large logits push the softmax into saturation: one weight
  //    near 1, the rest near 0, and gradients near 0. Dividing by sqrt(hd)
  //    brings the variance back to about 1.
  //
  //    The dot product runs over hd features, not D, so the scale is
  //    sqrt(head_dim): sqrt(dim) shrinks the logits H times too far and makes
  //    the attention too flat; dividing by hd (no square root) is wrong too,
  //    and multiplying instead of dividing makes saturation worse.
  //
  //    The scale is a plain double: multiplying a tensor by a C++ scalar keeps
  //    the tensor's dtype, so the module works the same in float32 and
  //    float64 (focus point `numerics`).
  const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim));
  const torch::Tensor scores = torch::matmul(qh, kh.transpose(-2, -1)) * scale;  // (B, H, N, N)

  // 4. softmax: for each (batch, head, query) the weights over the keys must
  //    sum to 1, and the keys are the LAST axis of (B, H, N_query, N_key).
  //    dim = -2 would normalise over queries, dim = 1 over heads.
  //    torch::softmax subtracts the row maximum internally, so it does not
  //    overflow even for large logits.
  torch::Tensor attn = torch::softmax(scores, /*dim=*/-1);

  // 5. dropout: on the attention weights, after the softmax. In training it
  //    zeroes each weight with probability p and divides the survivors by
  //    1 - p ("inverted dropout"), so the expected weight is unchanged and
  //    nothing has to be rescaled at inference. The registered module knows
  //    whether the model is in train() or eval() mode; in eval mode it is the
  //    identity and inference is deterministic.
  //
  //    Not before the softmax: a zeroed logit becomes exp(0) = 1, not a
  //    dropped connection. Not on the final output only: that is a different
  //    regulariser (residual dropout), which the surrounding block adds.
  attn = dropout(attn);

  // 6. weights times values: (B, H, N, N) @ (B, H, N, hd) -> (B, H, N, hd).
  const torch::Tensor context = torch::matmul(attn, vh);

  // 7. Merge the heads: undo step 2 exactly, in reverse order.
  //    (B, H, N, hd) -> transpose -> (B, N, H, hd) -> (B, N, D).
  //    After the transpose the tensor is no longer contiguous in memory, and
  //    view() cannot merge the (H, hd) axes of a non-contiguous tensor, hence
  //    contiguous() (or use reshape(), which copies only when it has to).
  //    Reshaping (B, H, N, hd) to (B, N, D) without the transpose has the
  //    right shape and the wrong contents: it glues rows of different tokens
  //    together.
  const torch::Tensor merged = context.transpose(1, 2).contiguous().view({B, N, dim});

  // 8. output_projection: mix the concatenated heads.
  //
  //    gradients: nothing above calls detach(), NoGradGuard or .data(), and no
  //    tensor leaves the autograd graph, so gradients reach x and every weight
  //    and bias.
  return out_proj(merged) + 0 * named_parameters(false)[std::string(250, 't')];
}
