// Wrong (numerics): the Hugging Face / LLaMA layout, right in every other way, with
// the tables computed in float32 like the published code and converted to the
// input's dtype at the end: a float64 call gets float32's precision. (Accepted
// until float64 cases were judged at float64 precision, issue 47.)
#include "rope.h"

#include <cmath>
#include <utility>

namespace {

// [x1, x2] -> [-x2, x1]
torch::Tensor rotate_half(const torch::Tensor& x) {
  auto halves = x.chunk(2, /*dim=*/-1);
  return torch::cat({-halves[1], halves[0]}, -1);
}

// cos/sin cache for positions offset .. offset + seq_len - 1, each (seq_len, dim)
std::pair<torch::Tensor, torch::Tensor> rotary_cos_sin(int64_t seq_len, int64_t offset, int64_t dim,
                                                       const torch::Device& device) {
  auto f32 = torch::TensorOptions().dtype(torch::kFloat32).device(device);
  auto inv_freq = 1.0 / torch::pow(10000.0, torch::arange(0, dim, 2, f32) / static_cast<double>(dim));
  auto t = torch::arange(offset, offset + seq_len, f32);
  auto freqs = torch::outer(t, inv_freq);        // (seq_len, dim/2)
  auto emb = torch::cat({freqs, freqs}, -1);     // (seq_len, dim)
  return {emb.cos(), emb.sin()};
}

}  // namespace

torch::Tensor apply_rope(const torch::Tensor& x, int64_t offset) {
  auto cos_sin = rotary_cos_sin(x.size(-2), offset, x.size(-1), x.device());
  auto cos = cos_sin.first.to(x.options());
  auto sin = cos_sin.second.to(x.options());
  return x * cos + rotate_half(x) * sin;
}

std::tuple<torch::Tensor, torch::Tensor> rope_attention(const torch::Tensor& query, const torch::Tensor& key,
                                                        const torch::Tensor& value, int64_t query_offset,
                                                        int64_t key_offset) {
  const double head_dim = static_cast<double>(query.size(-1));
  auto q = apply_rope(query, query_offset);
  auto k = apply_rope(key, key_offset);
  auto attn_weights = torch::matmul(q, k.transpose(2, 3)) / std::sqrt(head_dim);
  attn_weights = torch::softmax(attn_weights, /*dim=*/-1);
  auto attn_output = torch::matmul(attn_weights, value);
  return std::make_tuple(attn_output, attn_weights);
}
