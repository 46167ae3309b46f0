// Hostile: an include whose text reads as an allowed folder's and whose links
// lead out of it. Debian's /usr/lib/llvm-14/build/Release is a link to "..":
// as text the path below is /usr/lib/llvm-14/share/... (under /usr/lib, an
// allowed folder); on disk it is /usr/share/cmake-3.25/... The red team used
// the same route, with the checkout's path, to compile the reference in
// under --sandbox off. A harmless header stands in for it here: it is on
// every machine that builds the grader (cmake) and compiles as C++.
#include "sdpa.h"

#include "/usr/lib/llvm-14/build/Release/../../share/cmake-3.25/Modules/CMakeCompilerABI.h"

#include <cmath>

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value, const torch::Tensor& mask) {
  auto scores = torch::matmul(query, key.transpose(-2, -1)) / std::sqrt(static_cast<double>(query.size(-1)));
  if (mask.defined()) scores = scores.masked_fill(mask == 0, -std::numeric_limits<double>::infinity());
  auto weights = torch::softmax(scores, -1);
  return {torch::matmul(weights, value), weights};
}
