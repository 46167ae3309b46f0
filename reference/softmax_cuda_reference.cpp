#include "softmax_cuda_reference.h"

#include <limits>

namespace reference {
namespace {

at::Tensor stable_softmax(const at::Tensor& x) {
  auto shifted = x - std::get<0>(x.max(/*dim=*/-1, /*keepdim=*/true));
  auto e = shifted.exp();
  return e / e.sum(/*dim=*/-1, /*keepdim=*/true);
}

// The first `k` columns of each row are a softmax of those columns alone; the
// rest are NaN, as the grader's poisoned output shows unwritten elements.
at::Tensor written_prefix(const at::Tensor& x, int64_t k) {
  auto y = at::full(x.sizes(), std::numeric_limits<double>::quiet_NaN(), x.options());
  if (k > 0) y.narrow(/*dim=*/-1, 0, k).copy_(stable_softmax(x.narrow(/*dim=*/-1, 0, k)));
  return y;
}

}  // namespace

at::Tensor softmax_rows(const at::Tensor& input, const SoftmaxCudaVariant& variant) {
  TORCH_CHECK(input.dim() == 2, "softmax_rows expects (rows, cols), got ", input.dim(), " dimensions");
  const auto x = input.to(at::kDouble);
  const int64_t cols = x.size(1);
  if (variant.no_max_subtraction) {
    // As a kernel computes it: expf overflows past 88.7, the float sum too.
    auto e = x.to(at::kFloat).exp();
    return (e / e.sum(/*dim=*/-1, /*keepdim=*/true)).to(at::kDouble);
  }
  if (variant.partial_block_skipped > 0) {
    return written_prefix(x, cols / variant.partial_block_skipped * variant.partial_block_skipped);
  }
  if (variant.first_block_only > 0) return written_prefix(x, std::min(cols, variant.first_block_only));
  return stable_softmax(x);
}

}  // namespace reference
