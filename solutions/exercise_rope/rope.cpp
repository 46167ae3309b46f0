// Model answer for exercise_rope: rotary position embeddings (RoPE) and
// attention with them.
//
// The idea in one line: instead of adding a position vector to the token, turn
// the query and the key by an angle proportional to their positions. A dot
// product of two turned vectors only sees the difference of the two angles, so
// attention scores depend on how far apart two tokens are, not on where they
// are, while each token is still encoded on its own (which is what lets a KV
// cache store keys already rotated).
//
// Read it as a walk through the focus points of exercise.yaml.
#include "rope.h"

#include <cmath>

torch::Tensor apply_rope(const torch::Tensor& x, int64_t offset) {
  const int64_t n = x.size(-2), d = x.size(-1), half = d / 2;
  TORCH_CHECK(d % 2 == 0, "apply_rope: the head dimension must be even to form pairs, got d = ", d);

  // ---------------------------------------------------------------------------------
  // Focus points `numerics` and `device_placement`: every tensor made here takes x's
  // dtype and device. In float32 the positions and angles are exact enough for
  // thousands of positions; in float64 they are exact, and on a GPU they never leave it.
  const auto options = x.options();

  // ---------------------------------------------------------------------------------
  // Focus point `positions`: token n of x sits at position offset + n. When decoding,
  // the single new token is at position past_len, not 0: a decoded token rotated at 0
  // would look like the first token of the sequence to every cached key.
  auto positions = torch::arange(offset, offset + n, options);  // (N)

  // ---------------------------------------------------------------------------------
  // Focus point `frequencies`: pair i turns at theta_i = 10000^(-2i/d) radians per
  // position, from 1 (i = 0, local order) down to about 1/10000 (long range). The
  // "2i" counts channels in steps of two: there are d/2 pairs and d/2 frequencies.
  auto exponents = torch::arange(0, half, options) * (-2.0 / static_cast<double>(d));
  auto theta = torch::pow(10000.0, exponents);       // (d/2)
  auto angles = torch::outer(positions, theta);      // (N, d/2): broadcasts over (B, H)
  auto cos = angles.cos(), sin = angles.sin();

  // ---------------------------------------------------------------------------------
  // Focus points `rotation` and `norm`: the rotate-half layout pairs channel i with
  // channel i + d/2, and turns the pair counter-clockwise by one angle:
  //
  //   [x1']   [cos  -sin] [x1]
  //   [x2'] = [sin   cos] [x2]
  //
  // cos and sin of the SAME angle for both members: the matrix is a rotation, so every
  // token keeps its length. (The RoFormer paper pairs neighbours (2i, 2i + 1) instead;
  // both are valid, but a checkpoint trained with one is wrong under the other.)
  auto x1 = x.narrow(-1, 0, half), x2 = x.narrow(-1, half, half);
  return torch::cat({x1 * cos - x2 * sin, x2 * cos + x1 * sin}, -1);
}

std::tuple<torch::Tensor, torch::Tensor> rope_attention(const torch::Tensor& query, const torch::Tensor& key,
                                                        const torch::Tensor& value, int64_t query_offset,
                                                        int64_t key_offset) {
  // ---------------------------------------------------------------------------------
  // Focus points `qk_only` and `positions`: query and key are turned, each at its own
  // positions (a decoding query at query_offset, the cached keys from key_offset).
  // Value is not: it carries what a token says, not where it is, and position has
  // already done its work through the scores.
  auto q = apply_rope(query, query_offset);
  auto k = apply_rope(key, key_offset);

  // ---------------------------------------------------------------------------------
  // Focus point `relative_position`: q_m . k_n = (R(m) q) . (R(n) k) = q . R(n - m) k,
  // because rotations compose and R(m)^T = R(-m). Shift both offsets by 37 and not a
  // single weight moves: the grader checks exactly that.
  //
  // Focus point `attention`: from here it is plain scaled dot-product attention.
  const double scale = 1.0 / std::sqrt(static_cast<double>(query.size(-1)));
  auto scores = torch::matmul(q, k.transpose(-2, -1)) * scale;  // (B, H, Nq, Nk)
  auto weights = torch::softmax(scores, -1);                    // over the keys
  return {torch::matmul(weights, value), weights};
}
