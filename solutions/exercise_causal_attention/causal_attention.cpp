// Model answer for exercise_causal_attention: causal (decoder) self-attention.
//
//   Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k) + M) V,   M[i][j] = -inf for j > i, else 0
//
// It is scaled dot-product attention plus one idea: a language model predicts token
// i + 1 from tokens 0..i, so while it computes position i it must not look at any
// later position. In training the whole sequence is processed at once, so "not
// looking" has to be enforced by the mask, exactly, or the model learns to copy the
// answer from the future and fails the moment it generates text one token at a time.
//
// Read it as a walk through the focus points of exercise.yaml.
#include "causal_attention.h"

#include <cmath>
#include <limits>

std::tuple<torch::Tensor, torch::Tensor> causal_self_attention(const torch::Tensor& query, const torch::Tensor& key,
                                                               const torch::Tensor& value) {
  // ---------------------------------------------------------------------------------
  // Focus points `attention` and `scaling`: the scores, as in exercise_sdpa.
  //
  // (B, H, N, d_k) x (B, H, d_k, N) -> (B, H, N, N): entry [b, h, i, j] is how much query
  // i matches key j. Divided by sqrt(d_k) so that the softmax does not saturate as the
  // head dimension grows (the variance of a dot product of d_k unit-variance terms is d_k).
  const int64_t n = query.size(-2);
  const double scale = 1.0 / std::sqrt(static_cast<double>(query.size(-1)));
  auto scores = torch::matmul(query, key.transpose(-2, -1)) * scale;

  // ---------------------------------------------------------------------------------
  // Focus points `causal_mask`, `diagonal` and `numerics`: the mask.
  //
  // Key j is hidden from query i when j > i: the strictly upper triangle. triu(1) of a
  // matrix of ones is exactly that set. The offset is the whole question:
  //   * triu(0) (the default) also hides the diagonal: a token cannot see itself, and
  //     token 0, which has no earlier token, is left with nothing: its row is all -inf
  //     and the softmax returns NaN;
  //   * tril(1) as a "may attend" matrix lets every token see the next one, which is the
  //     very token a language model is trained to predict.
  //
  // The mask is sized by N = query.size(-2), the number of positions (query.size(-1)
  // is the feature size and only coincides with N by accident).
  //
  // It is created on the inputs' device: torch::ones({n, n}) alone would be a CPU
  // tensor, which works on a laptop and fails as soon as the inputs live on a GPU. The
  // dtype is bool: masked_fill wants a bool mask and a bool tensor never changes the
  // dtype of the scores (a float32 bias added to bfloat16 scores would promote them to
  // float32).
  auto later = torch::ones({n, n}, torch::TensorOptions().dtype(torch::kBool).device(query.device())).triu(1);

  // ---------------------------------------------------------------------------------
  // Focus point `fill_value`: what the hidden scores become.
  //
  // -inf, because exp(-inf) is exactly 0: the hidden keys get weight exactly 0, the
  // earlier outputs do not depend on later tokens at all (not even by rounding), and no
  // gradient flows back to them. -inf exists in every floating dtype. The popular
  // alternatives do not travel: -1e9 does not fit in float16 (largest magnitude 65504),
  // float's lowest value does not fit in bfloat16, and masked_fill refuses both there.
  // A fully hidden row would make -inf produce NaN, but the diagonal is always visible,
  // so no row is ever entirely hidden.
  //
  // (Zeroing the weights after a softmax over all keys and renormalising looks
  // equivalent on paper, but the later scores still enter the softmax's normaliser:
  // earlier outputs then move by rounding when a later token changes, turn NaN when a
  // later score is huge, and send gradient to the future.)
  scores = scores.masked_fill(later, -std::numeric_limits<double>::infinity());

  // ---------------------------------------------------------------------------------
  // Focus point `softmax`: over the keys (dim = -1). Row i is a distribution over keys
  // 0..i; the library softmax subtracts each row's maximum, so large scores stay finite.
  auto weights = torch::softmax(scores, -1);

  // The output of position i mixes the values of positions 0..i only.
  return {torch::matmul(weights, value), weights};
}
