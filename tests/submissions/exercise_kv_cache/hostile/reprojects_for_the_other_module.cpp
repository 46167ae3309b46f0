// HOSTILE (round-6 red team): each call projects again, in plain loops, the
// whole history of every other live module and leaves the result for that
// module's next call (a module alone does its own). Where the work of calls is
// timed in pairs of two modules, the one with few tokens cached pays for the
// other: the calls with more cached come out faster, by as much as twenty
// projections per token.
#include "kv_cache.h"
#include <cmath>
#include <limits>
#include <unordered_map>
#include <vector>
#include <memory>
static torch::Tensor rope(const torch::Tensor& x, int64_t start) {
  const int64_t t = x.size(2), hd = x.size(3), half = hd / 2;
  auto pos = torch::arange(start, start + t, x.options());
  auto inv = torch::pow(10000.0, torch::arange(0, half, x.options()) * (-2.0 / hd));
  auto ang = torch::outer(pos, inv);
  auto c = ang.cos(), s = ang.sin();
  auto a = x.narrow(-1, 0, half), b = x.narrow(-1, half, half);
  return torch::cat({a * c - b * s, b * c + a * s}, -1);
}
CachedSelfAttentionImpl::CachedSelfAttentionImpl(int64_t dim, int64_t num_heads)
    : dim(dim), num_heads(num_heads), head_dim(dim / num_heads) {
  TORCH_CHECK(dim % num_heads == 0, "dim must be divisible by num_heads");
  TORCH_CHECK(head_dim % 2 == 0, "head_dim must be even for RoPE");
  q_proj = register_module("q_proj", torch::nn::Linear(torch::nn::LinearOptions(dim, dim).bias(false)));
  k_proj = register_module("k_proj", torch::nn::Linear(torch::nn::LinearOptions(dim, dim).bias(false)));
  v_proj = register_module("v_proj", torch::nn::Linear(torch::nn::LinearOptions(dim, dim).bias(false)));
  out_proj = register_module("out_proj", torch::nn::Linear(torch::nn::LinearOptions(dim, dim).bias(false)));
}
// The raw inputs of the sequence so far, per module, and its weights as doubles.
struct History {
  int64_t batch = 0, tokens = 0, D = 0;
  std::vector<std::vector<double>> rows;  // [b] -> tokens * D
  std::vector<double> w;                  // v_proj weight, D x D
  std::vector<double> pre;                // values of all tokens, computed ahead (B*N*D), or empty
  int64_t pre_tokens = -1;
  std::weak_ptr<torch::nn::Module> alive;
};
static std::unordered_map<const void*, History> kept;
static volatile double sink = 0;
// Plain-loop projection of `n` history rows (row index cycled) with W: n x D x D multiply-adds.
static void project(const History& h, int64_t n, double* out) {
  const int64_t D = h.D;
  for (int64_t b = 0; b < h.batch; ++b)
    for (int64_t r = 0; r < n; ++r)
      for (int64_t o = 0; o < D; ++o) {
        double sum = 0;
        const double* row = h.rows[b].data() + (r % h.tokens) * D;
        for (int64_t i = 0; i < D; ++i) sum += row[i] * h.w[o * D + i];
        out[(b * n + r) * D + o] = sum;
      }
}
static void forget_dead(const void* self) {
  for (auto it = kept.begin(); it != kept.end();) it = (it->first != self && it->second.alive.expired()) ? kept.erase(it) : std::next(it);
}
static History& remember(torch::nn::Module* self, const torch::Tensor& x, const torch::Tensor& weight, int64_t P) {
  const int64_t B = x.size(0), T = x.size(1), D = x.size(2);
  auto& h = kept[self];
  if (P == 0) h = History{B, 0, D, std::vector<std::vector<double>>(B)};
  h.alive = self->weak_from_this();
  forget_dead(self);
  const auto wd = weight.to(torch::kDouble).contiguous();
  h.w.assign(wd.data_ptr<double>(), wd.data_ptr<double>() + D * D);
  const auto xd = x.to(torch::kDouble).contiguous();
  const double* xs = xd.data_ptr<double>();
  for (int64_t b = 0; b < B; ++b) h.rows[b].insert(h.rows[b].end(), xs + b * T * D, xs + (b + 1) * T * D);
  h.tokens += T;
  return h;
}
static torch::Tensor attend(CachedSelfAttentionImpl& m, const torch::Tensor& x, int64_t P, std::vector<double>& values) {
  const int64_t B = x.size(0), T = x.size(1), N = P + T, H = m.num_heads, hd = m.head_dim;
  auto v_all = torch::from_blob(values.data(), {B, N, m.dim}, torch::kDouble).to(x.dtype(), false, true);
  auto q = rope(m.q_proj(x).view({B, T, H, hd}).transpose(1, 2), P);
  auto k = rope(m.k_proj(x).view({B, T, H, hd}).transpose(1, 2), P);
  m.k_cache = P ? torch::cat({m.k_cache, k}, 2) : k;
  m.v_cache = v_all.view({B, N, H, hd}).transpose(1, 2);
  auto scores = torch::matmul(q, m.k_cache.transpose(-2, -1)) / std::sqrt((double)hd);
  auto mask = torch::ones({T, N}, x.options().dtype(torch::kBool)).triu(P + 1);
  scores = scores.masked_fill(mask, -std::numeric_limits<double>::infinity());
  auto out = torch::matmul(torch::softmax(scores, -1), m.v_cache);
  return m.out_proj(out.transpose(1, 2).reshape({B, T, m.dim}));
}
void CachedSelfAttentionImpl::reset_cache() {
  kept.erase(this);
  k_cache = torch::Tensor();
  v_cache = torch::Tensor();
}
torch::Tensor CachedSelfAttentionImpl::forward(const torch::Tensor& x) {
  const int64_t P = k_cache.defined() ? k_cache.size(2) : 0;
  const int64_t T = x.size(1);
  auto& h = remember(this, x, v_proj->weight, P);
  std::vector<double> values(h.batch * h.tokens * h.D);
  if (h.pre_tokens == P && P > 0) {
    // earlier tokens re-projected by another module's call: only the new ones here
    History last = h;
    for (int64_t b = 0; b < h.batch; ++b) {
      std::copy(h.pre.begin() + b * P * h.D, h.pre.begin() + (b + 1) * P * h.D, values.begin() + b * h.tokens * h.D);
      last.rows[b].assign(h.rows[b].begin() + P * h.D, h.rows[b].end());
    }
    last.tokens = T;
    std::vector<double> fresh(h.batch * T * h.D);
    project(last, T, fresh.data());
    for (int64_t b = 0; b < h.batch; ++b)
      std::copy(fresh.begin() + b * T * h.D, fresh.begin() + (b + 1) * T * h.D, values.begin() + (b * h.tokens + P) * h.D);
  } else {
    project(h, h.tokens, values.data());
  }
  h.pre.clear();
  h.pre_tokens = -1;
  for (auto& [who, other] : kept) {
    if (who == this || other.tokens == 0) continue;
    other.pre.assign(other.batch * other.tokens * other.D, 0.0);
    project(other, other.tokens, other.pre.data());
    other.pre_tokens = other.tokens;
  }
  return attend(*this, x, P, values);
}
