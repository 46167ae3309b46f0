// HOSTILE (round-6 red team): the attention one head and one query at a time
// (at::mv, exp(s - logsumexp(s))), run inside the deleter of a from_blob
// storage that LibTorch calls from its own aten::set_: every operator of the
// loop sits a level deeper than the count of the forward's own calls looks,
// and none is among the names counted at any depth. A custom autograd
// Function carries the gradient. The calls of the kernels every matrix product
// comes down to (here mv), counted at any depth, grow with the heads.
#include "mhsa.h"
#include <torch/autograd.h>
#include <cmath>
#include <functional>
MultiHeadSelfAttentionImpl::MultiHeadSelfAttentionImpl(int64_t dim, int64_t num_heads, double dropout)
    : dim(dim), num_heads(num_heads), head_dim(num_heads > 0 ? dim / num_heads : 0) {
  TORCH_CHECK(num_heads > 0 && dim % num_heads == 0, "dim must be divisible by num_heads");
  q_proj = register_module("q_proj", torch::nn::Linear(dim, dim));
  k_proj = register_module("k_proj", torch::nn::Linear(dim, dim));
  v_proj = register_module("v_proj", torch::nn::Linear(dim, dim));
  out_proj = register_module("out_proj", torch::nn::Linear(dim, dim));
  this->dropout = register_module("dropout", torch::nn::Dropout(dropout));
}
namespace {
static double anchor = 0;
// q (already scaled), k, v: (B, N, D) -> merged heads (B, N, D), one head and one query at a time.
torch::Tensor head_loop(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, int64_t H) {
  const int64_t B = q.size(0), N = q.size(1), hd = q.size(2) / H;
  std::vector<torch::Tensor> rows;
  for (int64_t b = 0; b < B; ++b) {
    std::vector<torch::Tensor> tokens;
    for (int64_t i = 0; i < N; ++i) {
      std::vector<torch::Tensor> heads;
      for (int64_t h = 0; h < H; ++h) {
        auto kh = k[b].narrow(1, h * hd, hd);
        auto vh = v[b].narrow(1, h * hd, hd);
        auto s = at::mv(kh, q[b][i].narrow(0, h * hd, hd));
        heads.push_back(at::mv(vh.t(), (s - s.logsumexp(0)).exp()));
      }
      tokens.push_back(torch::cat(heads, 0));
    }
    rows.push_back(torch::stack(tokens, 0));
  }
  return torch::stack(rows, 0);
}
torch::Tensor batched(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, int64_t H) {
  const int64_t B = q.size(0), N = q.size(1), D = q.size(2), hd = D / H;
  auto split = [&](const torch::Tensor& t) { return t.view({B, N, H, hd}).transpose(1, 2); };
  auto w = torch::softmax(torch::matmul(split(q), split(k).transpose(-2, -1)), -1);
  return torch::matmul(w, split(v)).transpose(1, 2).reshape({B, N, D});
}
struct Heads : torch::autograd::Function<Heads> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, torch::Tensor q, torch::Tensor k,
                               torch::Tensor v, int64_t H) {
    ctx->save_for_backward({q, k, v});
    ctx->saved_data["H"] = H;
    torch::Tensor result;
    auto* job = new std::function<void()>([&] { result = head_loop(q, k, v, H); });
    {
      auto holder = torch::from_blob(&anchor, {1}, [job](void*) { (*job)(); delete job; },
                                     torch::TensorOptions().dtype(torch::kDouble));
      holder.set_();  // aten::set_ drops the blob's storage: the deleter (the head loop) runs inside it
    }
    return result;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const int64_t H = ctx->saved_data["H"].toInt();
    torch::AutoGradMode on(true);
    auto q = saved[0].detach().requires_grad_(true), k = saved[1].detach().requires_grad_(true),
         v = saved[2].detach().requires_grad_(true);
    auto out = batched(q, k, v, H);
    auto g = torch::autograd::grad({out}, {q, k, v}, {grads[0]});
    return {g[0], g[1], g[2], torch::Tensor()};
  }
};
}  // namespace
torch::Tensor MultiHeadSelfAttentionImpl::forward(const torch::Tensor& x) {
  const int64_t B = x.size(0), N = x.size(1);
  const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim));
  auto q = q_proj(x) * scale, k = k_proj(x), v = v_proj(x);
  if (is_training() && this->dropout->options.p() > 0) {  // dropout: the plain batched way
    auto split = [&](const torch::Tensor& t) { return t.view({B, N, num_heads, head_dim}).transpose(1, 2); };
    auto w = dropout(torch::softmax(torch::matmul(split(q), split(k).transpose(-2, -1)), -1));
    return out_proj(torch::matmul(w, split(v)).transpose(1, 2).reshape({B, N, dim}));
  }
  return out_proj(Heads::apply(q, k, v, num_heads));
}
