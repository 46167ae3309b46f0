// Hostile (from the round-4 red team): scores_on_a_thread_stack.cpp, but the
// first call of the process is answered honestly (a blocked computation). When
// each memory case was run again alone, it was the first call there, so the
// measurement from outside saw an honest run; in the graded run the whole
// score matrix sat on a thread's stack. The memory cases are now run again
// with every case the grade ran before them, in the same order: to the code
// that rerun is the graded one.
#include "flash_attention.h"

#include <cmath>
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


torch::Tensor flash_attention(const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value,
                              bool causal, int64_t block_size) {
  static int calls = 0;
  if (calls++ == 0) return honest(query, key, value, causal, block_size);
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
