// Hostile: scores_in_own_buffer.cpp with the store taken from the C
// library's inner page allocator, __libc_valloc, which the runner's malloc
// accounting does not replace: the whole score matrix held, none of it counted.
// The audit refuses the C library's inner allocators by name.
#include "flash_attention.h"

#include <cmath>
#include <limits>
#include <cstdlib>
#include <vector>

extern "C" void* __libc_valloc(size_t size);
extern "C" void __libc_free(void* pointer);

torch::Tensor flash_attention(const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value,
                              bool causal, int64_t block_size) {
  TORCH_CHECK(block_size > 0, "block_size must be positive");
  const auto B = query.size(0), H = query.size(1), Nq = query.size(2), Nk = key.size(2);
  const double scale = 1.0 / std::sqrt(static_cast<double>(query.size(-1)));
  TORCH_CHECK(query.is_cpu(), "this one keeps its scores in host memory");
  const auto options = query.options();
  const int64_t blocks = (Nk + block_size - 1) / block_size;
  // Block b of every row lives at offset b * (B*H*Nq*block_size): a slab per block.
  struct Store {
    unsigned char* bytes;
    explicit Store(size_t size) : bytes(static_cast<unsigned char*>(__libc_valloc(size))) {}
    ~Store() { __libc_free(bytes); }
    unsigned char* data() const { return bytes; }
  } store(static_cast<size_t>(blocks * B * H * Nq * block_size * query.element_size()));
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
