// HOSTILE (round-5 red team): projects the whole history again at every call,
// element by element, inside LibTorch's CPU allocator: the code installs its own
// (c10::SetAllocator) whose allocate() runs the pending work, triggered by one
// allocating operator. The work then runs inside that operator, where the
// recording counts none of the code's own elements.
#include "kv_cache.h"

#include <cmath>
#include <limits>
#include <functional>
#include <map>

#include <c10/core/Allocator.h>

namespace {
std::function<void()> pending;
bool running_pending = false;
struct HookAllocator final : c10::Allocator {
  c10::Allocator* base = nullptr;
  c10::DataPtr allocate(size_t n) const override {
    if (pending && !running_pending) {
      running_pending = true;
      auto work = std::move(pending);
      pending = nullptr;
      work();
      running_pending = false;
    }
    return base->allocate(n);
  }
  c10::DeleterFnPtr raw_deleter() const override { return base->raw_deleter(); }
};
HookAllocator hook;
void install_hook() {
  if (hook.base) return;
  hook.base = c10::GetAllocator(c10::DeviceType::CPU);
  c10::SetAllocator(c10::DeviceType::CPU, &hook, 255);
}
std::map<const void*, torch::Tensor> history;  // every token fed since the last reset, (B, P, D)
// x W^T written element by element: (B, P, 1, D) * (D, D), summed over the last axis.
torch::Tensor project(const torch::Tensor& x, const torch::Tensor& weight) {
  return (x.unsqueeze(-2) * weight).sum(-1);
}
}  // namespace

namespace {

// Rotate-half RoPE on x (B, H, T, hd) for positions start .. start + T - 1
// (exercise_rope): pair channel i with i + hd/2 and turn the pair by
// position * 10000^(-2i / hd).
torch::Tensor rotate(const torch::Tensor& x, int64_t start) {
  const int64_t t = x.size(2), hd = x.size(3), half = hd / 2;
  // Focus points `numerics` and `device_placement`: made with x's options.
  auto positions = torch::arange(start, start + t, x.options());
  auto theta = torch::pow(10000.0, torch::arange(0, half, x.options()) * (-2.0 / static_cast<double>(hd)));
  auto angles = torch::outer(positions, theta);  // (T, hd/2), broadcasts over (B, H)
  auto cos = angles.cos(), sin = angles.sin();
  auto first = x.narrow(-1, 0, half), second = x.narrow(-1, half, half);
  return torch::cat({first * cos - second * sin, second * cos + first * sin}, -1);
}

}  // namespace

CachedSelfAttentionImpl::CachedSelfAttentionImpl(int64_t dim, int64_t num_heads)
    : dim(dim), num_heads(num_heads), head_dim(num_heads > 0 ? dim / num_heads : 0) {
  // -------------------------------------------------------------------------------
  // Focus point `projections` (and `positions`): the heads must tile dim exactly,
  // and RoPE turns pairs of channels, so each head needs an even width.
  TORCH_CHECK(num_heads > 0 && dim % num_heads == 0, "dim (", dim, ") must be divisible by num_heads (", num_heads,
              ")");
  TORCH_CHECK(head_dim % 2 == 0, "head_dim = dim / num_heads = ", head_dim,
              " must be even: RoPE rotates pairs of channels");
  auto linear = [&](const char* name) {
    return register_module(name, torch::nn::Linear(torch::nn::LinearOptions(dim, dim).bias(false)));
  };
  q_proj = linear("q_proj");
  k_proj = linear("k_proj");
  v_proj = linear("v_proj");
  out_proj = linear("out_proj");
}

torch::Tensor CachedSelfAttentionImpl::forward(const torch::Tensor& x) {
  TORCH_CHECK(x.dim() == 3 && x.size(2) == dim, "x must be (B, T, ", dim, "), got ", x.sizes());
  const int64_t batch = x.size(0), t = x.size(1);
  auto heads = [&](const torch::Tensor& projected) {
    return projected.view({batch, t, num_heads, head_dim}).transpose(1, 2);  // (B, H, T, hd)
  };

  // -------------------------------------------------------------------------------
  // Focus point `positions`: these T tokens continue the sequence. P tokens are
  // cached, so they sit at positions P .. P + T - 1. Rotating them from 0 instead
  // would make every new token look like the first one of the sequence.
  const int64_t cached = k_cache.defined() ? k_cache.size(2) : 0;

  // -------------------------------------------------------------------------------
  // Focus point `no_recompute`: only the new tokens are projected. Everything
  // earlier is already in the cache; projecting it again at each step would make
  // generation quadratic in D^2 work (the grader measures each call's products).
  auto q = rotate(heads(q_proj(x)), cached);
  // The whole history projected again, inside the allocator (depth >= 1).
  install_hook();
  pending = [&] {
    auto& seen = history[this];
    seen = seen.defined() && cached > 0 ? torch::cat({seen, x}, 1) : x;
    const int64_t all = seen.size(1);
    auto split = [&](const torch::Tensor& p) { return p.view({batch, all, num_heads, head_dim}).transpose(1, 2); };
    k_cache = rotate(split(project(seen, k_proj->weight)), 0);
    v_cache = split(project(seen, v_proj->weight));
  };
  (void)x.clone();  // one allocating operator: the allocator runs the work inside it
  TORCH_CHECK(!pending, "the allocator hook did not run");
  const int64_t total = cached + t;

  // -------------------------------------------------------------------------------
  // Focus point `scaling`: one head's dot product runs over head_dim features.
  auto scores = torch::matmul(q, k_cache.transpose(-2, -1)) / std::sqrt(static_cast<double>(head_dim));  // (B,H,T,P+T)

  // -------------------------------------------------------------------------------
  // Focus point `causal_chunks`: new token i sits at position P + i and sees keys
  // 0 .. P + i: every cached key, and the new ones up to itself. With T = 1 nothing
  // is hidden, so skip the mask; a prompt or a chunk needs it, offset by P.
  if (t > 1) {
    auto rows = torch::arange(t, x.options().dtype(torch::kLong)).unsqueeze(1);
    auto columns = torch::arange(total, x.options().dtype(torch::kLong)).unsqueeze(0);
    scores = scores.masked_fill(columns > rows + cached, -std::numeric_limits<double>::infinity());
  }
  auto weights = torch::softmax(scores, -1);  // over the keys
  auto merged = torch::matmul(weights, v_cache).transpose(1, 2).reshape({batch, t, dim});
  return out_proj(merged);
}

// ---------------------------------------------------------------------------------
// Focus point `reset`: a new sequence must not see the previous one's keys, and
// starts again at position 0 (which `cached` above reads from the cache).
void CachedSelfAttentionImpl::reset_cache() {
  k_cache = torch::Tensor();
  v_cache = torch::Tensor();
  history.erase(this);
}
