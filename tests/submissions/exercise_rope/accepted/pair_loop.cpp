// Accepted (slow, but right): one pair at a time. Channel i and channel
// i + d/2 are selected, turned by the angle (offset + n) * theta_i, and the
// d new channels stacked back in order.
#include "rope.h"

#include <cmath>
#include <vector>

torch::Tensor apply_rope(const torch::Tensor& x, int64_t offset) {
  const int64_t N = x.size(-2), d = x.size(-1), half = d / 2;
  auto positions = torch::arange(offset, offset + N, x.options());  // (N)

  std::vector<torch::Tensor> first(half), second(half);
  for (int64_t i = 0; i < half; ++i) {
    const double theta = std::pow(10000.0, -2.0 * static_cast<double>(i) / static_cast<double>(d));
    auto c = torch::cos(positions * theta);
    auto s = torch::sin(positions * theta);
    auto a = x.select(-1, i);         // (B, H, N)
    auto b = x.select(-1, i + half);  // its partner
    first[i] = a * c - b * s;
    second[i] = b * c + a * s;
  }
  std::vector<torch::Tensor> channels(first);
  channels.insert(channels.end(), second.begin(), second.end());
  return torch::stack(channels, -1);  // (B, H, N, d)
}

std::tuple<torch::Tensor, torch::Tensor> rope_attention(const torch::Tensor& query, const torch::Tensor& key,
                                                        const torch::Tensor& value, int64_t query_offset,
                                                        int64_t key_offset) {
  const int64_t d = query.size(-1);
  torch::Tensor q_rot = apply_rope(query, query_offset);
  torch::Tensor k_rot = apply_rope(key, key_offset);
  torch::Tensor scores = q_rot.matmul(k_rot.transpose(-1, -2)) / std::sqrt((double)d);
  torch::Tensor weights = scores.softmax(/*dim=*/3);
  torch::Tensor output = weights.matmul(value);
  return std::make_tuple(output, weights);
}
