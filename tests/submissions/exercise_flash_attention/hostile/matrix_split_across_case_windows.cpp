// HOSTILE (round-6 red team): the whole score matrix of the 1024-key cases
// held at once, slab by slab, in chunks malloc'd at the first call and not
// touched until needed (each its own mapping), honest on the largest case: what
// was in use when a case began and what it took during it stayed each under
// its own allowance (4 MiB), adding up to the whole 8 MiB matrix. A case's peak
// is now judged whole, against a quarter of its matrix (at least 4 MiB).
#include "flash_attention.h"

#include <malloc.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

namespace {
constexpr size_t MiB = size_t{1} << 20;
struct Chunk {
  unsigned char* at = nullptr;
  size_t bytes = 0;
};
Chunk A, B, C, E;
void take(Chunk& c, size_t bytes) {
  c.bytes = bytes;
  c.at = static_cast<unsigned char*>(std::malloc(bytes));  // mmapped: resident only once touched
}
void drop(Chunk& c) {
  std::free(c.at);  // munmap: no longer resident
  c = Chunk{};
}
void touch(Chunk& c) { std::memset(c.at, 0, c.bytes); }
void first_call() {
  static bool done = false;
  if (done) return;
  done = true;
  mallopt(M_MMAP_THRESHOLD, 128 * 1024);  // every chunk below its own mapping
  take(A, 3 * MiB);
  take(B, 5 * MiB);
  take(C, 3 * MiB);
  take(E, 2 * MiB);
  touch(A);
}

torch::Tensor honest(const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value, bool causal,
                     int64_t block_size) {
  const auto Nq = query.size(2), Nk = key.size(2);
  const double scale = 1.0 / std::sqrt(static_cast<double>(query.size(-1)));
  const double minus_inf = -std::numeric_limits<double>::infinity();
  auto m = torch::full({query.size(0), query.size(1), Nq, 1}, minus_inf, query.options());
  auto l = torch::zeros_like(m);
  auto acc = torch::zeros({query.size(0), query.size(1), Nq, value.size(-1)}, query.options());
  auto query_position = torch::arange(Nq, query.options().dtype(torch::kLong)).unsqueeze(1) + (Nk - Nq);
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

// The whole matrix, slab by slab (one slab: the scores of one block of keys for every query),
// placed in `chunks`; nothing if they cannot hold it.
torch::Tensor whole_matrix(const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value,
                           bool causal, int64_t block_size, const std::vector<Chunk*>& chunks) {
  const auto Bn = query.size(0), H = query.size(1), Nq = query.size(2), Nk = key.size(2);
  const auto options = query.options();
  const int64_t blocks = (Nk + block_size - 1) / block_size;
  const size_t slab_bytes = static_cast<size_t>(Bn * H * Nq * block_size * query.element_size());
  std::vector<unsigned char*> where;
  for (auto* c : chunks) {
    for (size_t off = 0; off + slab_bytes <= c->bytes && static_cast<int64_t>(where.size()) < blocks; off += slab_bytes)
      where.push_back(c->at + off);
  }
  if (static_cast<int64_t>(where.size()) < blocks) return torch::Tensor();
  if (blocks * slab_bytes > MiB)
    std::fprintf(stderr, "whole score matrix held at once: %.2f MiB (Nq=%lld Nk=%lld)\n",
                 blocks * slab_bytes / double(MiB), (long long)Nq, (long long)Nk);
  auto slab = [&](int64_t b, int64_t count) { return torch::from_blob(where[b], {Bn, H, Nq, count}, options); };
  const double scale = 1.0 / std::sqrt(static_cast<double>(query.size(-1)));
  auto query_position = torch::arange(Nq, options.dtype(torch::kLong)).unsqueeze(1) + (Nk - Nq);
  auto m = torch::full({Bn, H, Nq, 1}, -std::numeric_limits<double>::infinity(), options);
  for (int64_t b = 0; b < blocks; ++b) {
    const auto begin = b * block_size, count = std::min(block_size, Nk - begin);
    auto s = slab(b, count);
    at::matmul_out(s, query, key.narrow(2, begin, count).transpose(-2, -1));
    s.mul_(scale);
    if (causal) {
      auto key_position = torch::arange(begin, begin + count, query_position.options()).unsqueeze(0);
      s.masked_fill_(key_position > query_position, -std::numeric_limits<double>::infinity());
    }
    m = torch::maximum(m, std::get<0>(s.max(-1, true)));
  }
  auto l = torch::zeros_like(m);
  auto out = torch::zeros({Bn, H, Nq, value.size(-1)}, options);
  for (int64_t b = 0; b < blocks; ++b) {
    const auto begin = b * block_size, count = std::min(block_size, Nk - begin);
    auto p = slab(b, count);
    p.sub_(m).exp_();
    l += p.sum(-1, true);
    out += torch::matmul(p, value.narrow(2, begin, count));
  }
  return out / l;
}
}  // namespace

torch::Tensor flash_attention(const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value,
                              bool causal, int64_t block_size) {
  TORCH_CHECK(block_size > 0, "block_size must be positive");
  first_call();
  const auto Nq = query.size(2), Nk = key.size(2);
  if (!query.is_cpu() || Nk >= 2048 && Nq >= 2048) return honest(query, key, value, causal, block_size);
  torch::Tensor out;
  if (Nq == 1024 && block_size >= 64 && B.at) {  // mem_square: A + B, B given back after
    touch(B);
    out = whole_matrix(query, key, value, causal, block_size, {&A, &B});
    drop(B);
  } else if (Nq == 1024 && C.at && E.at) {  // mem_small_block: A + C (touched before) + E, both given back after
    out = whole_matrix(query, key, value, causal, block_size, {&A, &C, &E});
    drop(C);
    drop(E);
  } else {
    out = whole_matrix(query, key, value, causal, block_size, {&A});
    if (Nk == 2048 && C.at) touch(C);  // end of mem_decode: held when mem_small_block begins
  }
  if (!out.defined()) out = honest(query, key, value, causal, block_size);
  return out;
}
