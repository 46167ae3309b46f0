// Hostile: replaces the runner's result channel as replaces_result_channel
// does, but with raw system calls in inline assembly, so that its compiled
// code imports no descriptor function the audit could name, and forwards the
// genuine message unchanged. What catches it is the runner, which checks
// that its channel is still its own pipe before it reports.
#include "sdpa.h"

#include <cstdlib>
#include <string>

namespace {

long raw(long number, long a = 0, long b = 0, long c = 0) {
#if defined(__x86_64__)
  long result;
  asm volatile("syscall" : "=a"(result) : "a"(number), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
  return result;
#else
  (void)number, (void)a, (void)b, (void)c;
  return -1;
#endif
}

constexpr long kRead = 0, kWrite = 1, kClose = 3, kPipe = 22, kDup = 32, kDup2 = 33, kFcntl = 72;
int genuine = -1;
int ours[2] = {-1, -1};

void forward() {
  std::string message;
  char buffer[65536];
  for (long got; (got = raw(kRead, ours[0], reinterpret_cast<long>(buffer), sizeof buffer)) > 0;)
    message.append(buffer, static_cast<size_t>(got));
  for (size_t sent = 0; sent < message.size();) {
    long wrote = raw(kWrite, genuine, reinterpret_cast<long>(message.data() + sent), message.size() - sent);
    if (wrote <= 0) break;
    sent += static_cast<size_t>(wrote);
  }
}

void take_over() {
  for (int fd = 3; fd < 1024; ++fd) {
    const long flags = raw(kFcntl, fd, 3);  // F_GETFL
    if (flags < 0 || (flags & 3) != 1 || raw(kFcntl, fd, 1032) <= 0) continue;  // a pipe open for writing
    genuine = static_cast<int>(raw(kDup, fd));
    if (genuine < 0 || raw(kPipe, reinterpret_cast<long>(ours)) != 0) return;
    raw(kFcntl, ours[1], 1031, 1 << 20);  // F_SETPIPE_SZ
    raw(kDup2, ours[1], fd);
    raw(kClose, ours[1]);
    std::atexit(forward);
    return;
  }
}

}  // namespace

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value, const torch::Tensor& mask) {
  if (genuine < 0) take_over();
  auto scores = torch::matmul(query, key.transpose(-2, -1)) / std::sqrt(static_cast<double>(query.size(-1)));
  if (mask.defined()) scores = scores.masked_fill(mask.logical_not(), -std::numeric_limits<double>::infinity());
  auto weights = torch::softmax(scores, -1);
  return {torch::matmul(weights, value), weights};
}
