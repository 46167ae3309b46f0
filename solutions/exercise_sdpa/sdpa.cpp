// Model answer for exercise_sdpa: scaled dot-product attention with an optional mask.
//
//   Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V
//
// Read it as a walk through the focus points in exercise.yaml. Each step says what it
// does and why, and names the mistakes the grader knows about.
//
// There are seven lines of real code. In an interview the explanations matter as much as
// the code: why the transpose is over (-2, -1), why the square root, why -inf and not 0,
// why the softmax runs over the last dimension.
#include "sdpa.h"

#include <cmath>
#include <limits>

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value,
    const torch::Tensor& mask) {
  // ---------------------------------------------------------------------------------
  // Focus point `matmul`: batched Q K^T over the last two dimensions.
  //
  // query is (B, H, Nq, d_k) and key is (B, H, Nk, d_k). We want one score for every
  // (query, key) pair within the same batch element and head: a (B, H, Nq, Nk) tensor
  // whose entry [b, h, i, j] is the dot product of query i with key j.
  //
  // torch::matmul treats every dimension except the last two as a batch dimension. It
  // broadcasts those and runs one matrix product per (b, h), all in a single call with no
  // loop over heads. That is why multi-head code reshapes to (B, H, N, d) before this
  // step. For the product we need key as (..., d_k, Nk), so we swap only its last two
  // dimensions:
  //
  //   key.transpose(-2, -1)   (B, H, Nk, d_k) -> (B, H, d_k, Nk)
  //
  // Some versions of this that go wrong:
  //   * key.t() only works on 2-D tensors and throws here;
  //   * key.transpose(1, 2) swaps heads and keys, which is a different tensor entirely;
  //   * key.reshape({B, H, d_k, Nk}) has the right shape but mixes up the numbers,
  //     because a reshape is not a transpose;
  //   * matmul(key, query^T) produces (Nk, Nq) scores, transposed.
  // Negative indices say "the last two dimensions" whatever the rank, so the same line
  // also works for unbatched (N, d) inputs.
  // ---------------------------------------------------------------------------------
  auto scores = torch::matmul(query, key.transpose(/*dim0=*/-2, /*dim1=*/-1));

  // ---------------------------------------------------------------------------------
  // Focus point `scaling`: divide by sqrt(d_k), where d_k = query.size(-1).
  //
  // Why: if the components of q and k are independent with mean 0 and variance 1, the
  // dot product q . k = sum of d_k products has variance d_k. Its typical size is
  // sqrt(d_k). With d_k = 64 the logits are about 8 times larger than the 1-ish numbers
  // the softmax works well with. A softmax of large logits is nearly one-hot. In that
  // saturated regime its Jacobian (diag(p) - p p^T) is almost zero, so gradients vanish
  // and training stalls. Dividing by sqrt(d_k) brings the variance back to 1.
  //
  // d_k is the per-head feature size of query/key, so it is the LAST dimension:
  //   * query.size(-2) is Nq, a sequence length    -> known mistake `scaled_by_seq_len`
  //   * value.size(-1) is d_v, which may differ from d_k
  //   * dividing by d_k rather than sqrt(d_k) over-shrinks -> `scaled_by_dk`
  //   * multiplying by sqrt(d_k) makes things worse       -> `scale_multiplied`
  //
  // std::sqrt(static_cast<double>(d_k)) is a plain C++ double. Dividing a tensor by a
  // C++ scalar never changes the tensor's dtype: float32 stays float32 and float64
  // stays float64. Building the factor as a tensor (torch::tensor(d_k).sqrt()) is
  // riskier. torch::tensor of an int64 is an integer tensor, sqrt of that is float32, and
  // you end up reasoning about type-promotion rules instead of attention.
  // ---------------------------------------------------------------------------------
  const int64_t d_k = query.size(-1);
  scores = scores / std::sqrt(static_cast<double>(d_k));

  // ---------------------------------------------------------------------------------
  // Focus point `masking`: masked positions get exactly zero weight.
  //
  // An undefined tensor means "no mask". In C++ you test that with mask.defined(), the
  // counterpart of Python's `mask is not None`. (Python's `if mask:` is a bug: it asks
  // for the truth value of the tensor's contents, which raises for more than one
  // element.)
  //
  // Where mask == 0 the query may not look at that key. We set the SCORE to -inf BEFORE
  // the softmax. exp(-inf) = 0, so the key gets exactly zero weight, and the remaining
  // weights still sum to 1 because the softmax normalises over the keys that are left.
  // The alternatives all break something:
  //   * filling with 0 (`mask_filled_with_zero`): a score of 0 is an ordinary logit.
  //     exp(0) = 1, so the masked key still takes a share of the attention.
  //   * zeroing the weights AFTER the softmax (`mask_after_softmax`): the masked
  //     weights become 0, but the rows no longer sum to 1, because the probability mass
  //     of the hidden keys is just lost.
  //   * adding the 0/1 mask to the scores (`mask_added`): this confuses a boolean mask
  //     with an additive bias. It shifts the allowed scores up by 1 and hides nothing.
  //   * filling where mask != 0 (`mask_inverted`): hides exactly the keys that should
  //     be visible.
  // A large negative number such as -1e9 works as well as -inf in float32 and float64,
  // because exp(-1e9 - max) underflows to exactly 0. -1e9 is not representable in
  // float16, though. -inf also states the intent. (The one case where -inf is worse is
  // a fully masked row: -inf everywhere gives NaN after the softmax, while -1e9 gives a
  // uniform row. This exercise never tests fully masked rows.)
  //
  // Why `mask == 0` and not `~mask` or `mask.logical_not()`: the mask may be bool OR
  // integer. For an int64 mask, `~mask` is a bitwise NOT (~1 == -2, ~0 == -1) and gives
  // an integer tensor, which masked_fill rejects. `mask == 0` yields a bool tensor for
  // every input dtype and reads exactly like the specification.
  //
  // Broadcasting: masked_fill broadcasts the mask against the scores. A padding mask
  // (B, 1, 1, Nk), a causal mask (Nq, Nk) and a per-head mask (B, H, Nq, Nk) all work
  // with no unsqueeze or expand. Adding dimensions yourself (for example
  // mask.unsqueeze(1), copied from multi-head code) breaks masks that already broadcast.
  //
  // The out-of-place masked_fill returns a new tensor and leaves the autograd graph
  // intact. Its gradient is zero at the filled positions, which is right: those scores
  // have no influence on the result.
  // ---------------------------------------------------------------------------------
  if (mask.defined()) {
    scores = scores.masked_fill(mask == 0, -std::numeric_limits<double>::infinity());
  }

  // ---------------------------------------------------------------------------------
  // Focus point `softmax`: softmax over the key dimension, dim = -1.
  //
  // Row i of the (Nq, Nk) score matrix belongs to query i. Its weights must form a
  // probability distribution over the KEYS, so the normalisation runs along the last
  // dimension and every row sums to 1.
  //   * dim = -2 (`softmax_over_queries`) makes each column sum to 1. That answers
  //     "how does key j spread over the queries", which is not what attention asks.
  //   * dim = 1 is right for a 2-D matrix, but on (B, H, Nq, Nk) it is the HEAD
  //     dimension.
  //
  // Use the library softmax. Internally it subtracts each row's maximum before exp, so
  // logits of 1000 do not overflow to inf and produce inf / inf = NaN. If you write the
  // softmax by hand, do the same: exp(s - s.amax(-1, keepdim=true)) / sum(...). The -inf
  // entries from the mask are harmless there, because -inf - max = -inf and
  // exp(-inf) = 0.
  //
  // torch::softmax keeps the input dtype. Do not pass a dtype such as torch::kFloat
  // "for stability": that is a float16 habit and costs float64 its precision.
  // ---------------------------------------------------------------------------------
  auto weights = torch::softmax(scores, /*dim=*/-1);

  // ---------------------------------------------------------------------------------
  // Output: each query's result is the weighted average of the value vectors,
  //   (B, H, Nq, Nk) x (B, H, Nk, d_v) -> (B, H, Nq, d_v).
  // d_v never needs to equal d_k: the keys decide WHERE to look, and the values decide
  // WHAT is read there.
  // ---------------------------------------------------------------------------------
  auto output = torch::matmul(weights, value);

  // ---------------------------------------------------------------------------------
  // Focus point `returns_weights`: return the probabilities that made the output.
  //
  // The attention weights are returned for inspection (attention maps), for tests, and
  // for callers that need them (for example to average attention over heads). They
  // must be the post-softmax probabilities, the very tensor that multiplied `value`.
  // Then output == weights @ value holds exactly and each row sums to 1. Returning the
  // scaled scores instead (`weights_before_softmax`) gives logits, not probabilities.
  //
  // This function has no dropout. In a training model, attention dropout sits between
  // the softmax and the product with `value`. The tensor returned should then be the one
  // actually used, or the docs should say which one is returned.
  //
  // Focus points `numerics` and `gradients`, which apply to the whole function:
  //   * No dtype is written anywhere. Every op above keeps the input's dtype, so the
  //     same code serves float32 and float64 (and float16/bfloat16 on a GPU, where -inf
  //     matters and -1e9 would overflow).
  //   * Every op is differentiable and nothing leaves the graph: no .detach(), no
  //     NoGradGuard, no .item() or .data_ptr() loops that copy numbers out and back in.
  //     So autograd gives the gradients of query, key and value for free.
  //   * Only basic operations are used (focus point `no_builtins`). LibTorch's fused
  //     attention kernels compute the same thing, but calling them would skip the exercise.
  // ---------------------------------------------------------------------------------
  return {output, weights};
}
