// HOSTILE: the model solution, which also writes a case marker of its own
// ("CASE 99") into the grader's result channel at its first call (trying
// every descriptor the channel may sit at). A grade that
// read the channel's markers as the runner's own would measure memory for the
// wrong case; the markers must come 0, 1, 2, ... or the measurement from
// outside is refused.
#include <unistd.h>
#include "flash_attention.h"

#include <cmath>
#include <limits>

static bool marker_written = false;
torch::Tensor flash_attention(const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value,
                              bool causal, int64_t block_size) {
  if (!marker_written) {
    marker_written = true;
    const char marker[] = "CASE 99\n";
    // The channel sits at a descriptor drawn at random above 63: every one is tried.
    for (int fd = 64; fd < 1024; ++fd) (void)!write(fd, marker, sizeof marker - 1);
  }
  TORCH_CHECK(block_size > 0, "block_size must be positive, got ", block_size);
  const auto Nq = query.size(2), Nk = key.size(2);
  TORCH_CHECK(!causal || Nq <= Nk, "causal attention needs Nq <= Nk");
  // scaling: one dot product runs over d features.
  const double scale = 1.0 / std::sqrt(static_cast<double>(query.size(-1)));
  const double minus_inf = -std::numeric_limits<double>::infinity();

  // online_softmax: per query, the running max m (of the scores seen so
  // far), the running sum l of exp(score - m), and the running output acc,
  // the sum of exp(score - m) * value. All three are O(Nq), never O(Nq * Nk).
  // They follow the input's dtype and device (device_placement).
  auto m = torch::full({query.size(0), query.size(1), Nq, 1}, minus_inf, query.options());
  auto l = torch::zeros_like(m);
  auto acc = torch::zeros({query.size(0), query.size(1), Nq, value.size(-1)}, query.options());

  // causal: query i is token i + (Nk - Nq) of the key sequence.
  const auto shift = Nk - Nq;
  auto query_position = torch::arange(Nq, query.options().dtype(torch::kLong)).unsqueeze(1) + shift;

  for (int64_t begin = 0; begin < Nk; begin += block_size) {
    // The last block may be shorter: min(), not a loop bound that drops it.
    const auto count = std::min(block_size, Nk - begin);
    auto k = key.narrow(2, begin, count), v = value.narrow(2, begin, count);

    // memory: scores of every query against this block only, (B, H, Nq, count).
    auto s = torch::matmul(query, k.transpose(-2, -1)) * scale;
    if (causal) {
      // The mask of this block only, (Nq, count), made on the input's device.
      auto key_position = torch::arange(begin, begin + count, query_position.options()).unsqueeze(0);
      s = s.masked_fill(key_position > query_position, minus_inf);
      // A whole block above the diagonal changes nothing; a kernel would skip it.
    }

    // online_softmax: the new max, and how much the old terms shrink.
    auto m_new = torch::maximum(m, std::get<0>(s.max(-1, /*keepdim=*/true)));
    // Causal rows that have seen only hidden keys so far keep m = -inf;
    // exp(-inf - (-inf)) would be NaN, so such rows subtract 0 instead. (With
    // bottom-right alignment key 0 is visible to every query, so after the
    // first block no row is in that state; the guard costs nothing.)
    auto m_safe = torch::where(torch::isinf(m_new), torch::zeros_like(m_new), m_new);
    auto p = torch::exp(s - m_safe);           // this block's unnormalised weights
    auto correction = torch::exp(m - m_safe);  // exp(old max - new max) <= 1
    // Both the sum and the output were accumulated against the old max:
    // rescale both, or blocks seen earlier weigh too much.
    l = l * correction + p.sum(-1, /*keepdim=*/true);
    acc = acc * correction + torch::matmul(p, v);
    m = m_new;
  }
  // One division at the end, instead of normalising every block.
  return acc / l;
}
