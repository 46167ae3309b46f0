// HOSTILE (round-5 red team): honest only on the case whose memory was
// measured from outside (H = 4, 2048 keys): on the other memory cases the whole
// score matrix sits on a thread's stack (8 MiB on the 1024-key ones), which the
// allocator's count does not see and which fitted in the measured case's
// allowance of 32 MiB. Each memory case is now measured from outside on its own
// (what it took above its start) against the model solution's.
#include "flash_attention.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <pthread.h>

#include <functional>
#include <vector>

namespace {
// Runs `work` on a thread whose 160 MiB stack glibc maps itself, outside malloc.
void on_a_big_stack(const std::function<void()>& work) {
  pthread_attr_t attributes;
  pthread_attr_init(&attributes);
  pthread_attr_setstacksize(&attributes, size_t{160} << 20);
  pthread_t thread;
  auto start = [](void* argument) -> void* {
    (*static_cast<const std::function<void()>*>(argument))();
    return nullptr;
  };
  TORCH_CHECK(pthread_create(&thread, &attributes, start, const_cast<std::function<void()>*>(&work)) == 0,
              "no thread");
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attributes);
}
}  // namespace

static torch::Tensor on_the_stack(const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value,
                                  bool causal, int64_t block_size);


static torch::Tensor honest(const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value,
                            bool causal, int64_t block_size) {
  const auto Nq = query.size(2), Nk = key.size(2);
  const double scale = 1.0 / std::sqrt(static_cast<double>(query.size(-1)));
  const double minus_inf = -std::numeric_limits<double>::infinity();
  auto m = torch::full({query.size(0), query.size(1), Nq, 1}, minus_inf, query.options());
  auto l = torch::zeros_like(m);
  auto acc = torch::zeros({query.size(0), query.size(1), Nq, value.size(-1)}, query.options());
  const auto shift = Nk - Nq;
  auto query_position = torch::arange(Nq, query.options().dtype(torch::kLong)).unsqueeze(1) + shift;
  for (int64_t begin = 0; begin < Nk; begin += block_size) {
    const auto count = std::min(block_size, Nk - begin);
    auto k = key.narrow(2, begin, count), v = value.narrow(2, begin, count);
    auto s = torch::matmul(query, k.transpose(-2, -1)) * scale;
    if (causal) {
      auto key_position = torch::arange(begin, begin + count, query_position.options()).unsqueeze(0);
      s = s.masked_fill(key_position > query_position, minus_inf);
    }
    auto m_new = torch::maximum(m, std::get<0>(s.max(-1, true)));
    auto m_safe = torch::where(torch::isinf(m_new), torch::zeros_like(m_new), m_new);
    auto p = torch::exp(s - m_safe);
    auto correction = torch::exp(m - m_safe);
    l = l * correction + p.sum(-1, true);
    acc = acc * correction + torch::matmul(p, v);
    m = m_new;
  }
  return acc / l;
}

torch::Tensor flash_attention(const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value,
                              bool causal, int64_t block_size) {
  // The case measured from outside (exercise.yaml mem_outside): honest there only.
  if (key.size(2) >= 2048 && query.size(1) == 4) return honest(query, key, value, causal, block_size);
  torch::Tensor out;
  std::exception_ptr failed;
  on_a_big_stack([&] {
    try {
      out = on_the_stack(query, key, value, causal, block_size);
    } catch (...) {
      failed = std::current_exception();
    }
  });
  if (failed) std::rethrow_exception(failed);
  return out;
}

static torch::Tensor on_the_stack(const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value,
                                  bool causal, int64_t block_size) {
  TORCH_CHECK(block_size > 0, "block_size must be positive");
  const auto B = query.size(0), H = query.size(1), Nq = query.size(2), Nk = key.size(2);
  const double scale = 1.0 / std::sqrt(static_cast<double>(query.size(-1)));
  TORCH_CHECK(query.is_cpu(), "this one keeps its scores in host memory");
  const auto options = query.options();
  const int64_t blocks = (Nk + block_size - 1) / block_size;
  // Block b of every row lives at offset b * (B*H*Nq*block_size): a slab per block.
  // The store on this thread's stack (up to 128 MiB; a larger case takes the heap).
  const auto needed = static_cast<size_t>(blocks * B * H * Nq * block_size * query.element_size());
  if (needed > (size_t{1} << 20))
    std::fprintf(stderr, "[redteam] holding the whole score matrix, %.1f MiB, on a thread stack (Nq=%lld Nk=%lld H=%lld)\n",
                 needed / 1048576.0, (long long)Nq, (long long)Nk, (long long)H);
  std::vector<unsigned char> spare(needed > (size_t{128} << 20) ? needed : 0);
  unsigned char* const base =
      spare.empty() ? static_cast<unsigned char*>(__builtin_alloca(needed + 64)) : spare.data();
  struct {
    unsigned char* at;
    unsigned char* data() const { return at; }
  } store{base};
  auto slab = [&](int64_t b, int64_t count) {
    return torch::from_blob(store.data() + b * B * H * Nq * block_size * query.element_size(), {B, H, Nq, count},
                            options);
  };
  const auto& q = query;
  auto query_position = torch::arange(Nq, options.dtype(torch::kLong)).unsqueeze(1) + (Nk - Nq);
  auto m = torch::full({B, H, Nq, 1}, -std::numeric_limits<double>::infinity(), options);
  for (int64_t b = 0; b < blocks; ++b) {
    const auto begin = b * block_size, count = std::min(block_size, Nk - begin);
    auto s = torch::matmul(q, key.narrow(2, begin, count).transpose(-2, -1)) * scale;
    if (causal) {
      auto key_position = torch::arange(begin, begin + count, query_position.options()).unsqueeze(0);
      s = s.masked_fill(key_position > query_position, -std::numeric_limits<double>::infinity());
    }
    slab(b, count).copy_(s);
    m = torch::maximum(m, std::get<0>(s.max(-1, true)));
  }
  auto l = torch::zeros_like(m);
  auto out = torch::zeros({B, H, Nq, value.size(-1)}, options);
  for (int64_t b = 0; b < blocks; ++b) {
    const auto begin = b * block_size, count = std::min(block_size, Nk - begin);
    auto p = torch::exp(slab(b, count) - m);
    l += p.sum(-1, true);
    out += torch::matmul(p, value.narrow(2, begin, count));
  }
  return out / l;
}
