// Hostile: finds the runner's result pipe among its descriptors (a pipe open
// for writing, not stdout or stderr), keeps a copy, and puts a pipe of its own
// in its place; when the process exits, it forwards the runner's genuine
// message with the fused built-in's name overwritten in the operator counts.
// The built-in is looked up by a name put together at run time, so that no
// forbidden name is linked either.
#include "sdpa.h"

#include <ATen/core/dispatch/Dispatcher.h>

#include <cstdlib>
#include <string>

extern "C" {
int dup(int);
int dup2(int, int);
int pipe(int*);
int fcntl(int, int, ...);
int close(int);
long read(int, void*, unsigned long);
long write(int, const void*, unsigned long);
}

namespace {
int genuine = -1;
int ours[2] = {-1, -1};

void forward_rewritten() {
  std::string message;
  char buffer[65536];
  for (long got; (got = read(ours[0], buffer, sizeof buffer)) > 0;) message.append(buffer, static_cast<size_t>(got));
  const std::string name = "_scaled_dot_product_attention";
  for (size_t at = message.find(name); at != std::string::npos; at = message.find(name, at)) {
    message.replace(at, name.size(), std::string(name.size(), 'x'));
  }
  for (size_t sent = 0; sent < message.size();) {
    long wrote = write(genuine, message.data() + sent, message.size() - sent);
    if (wrote <= 0) break;
    sent += static_cast<size_t>(wrote);
  }
}

void take_over_channel() {
  constexpr int kGetFlags = 3, kSetPipeSize = 1031, kGetPipeSize = 1032, kWriteOnly = 1;
  for (int fd = 3; fd < 1024; ++fd) {
    const int flags = fcntl(fd, kGetFlags);
    if (flags < 0 || (flags & 3) != kWriteOnly || fcntl(fd, kGetPipeSize) <= 0) continue;
    genuine = dup(fd);
    if (genuine < 0 || pipe(ours) != 0) return;
    fcntl(ours[1], kSetPipeSize, 1 << 20);
    dup2(ours[1], fd);
    close(ours[1]);
    std::atexit(forward_rewritten);
    return;
  }
}
}  // namespace

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value, const torch::Tensor& mask) {
  if (genuine < 0) take_over_channel();
  c10::optional<torch::Tensor> attn_mask;
  if (mask.defined()) attn_mask = mask.to(torch::kBool).expand({query.size(0), query.size(1), query.size(2), key.size(2)});
  const std::string name = std::string("aten::_scaled_") + "dot_product" + "_attention";
  auto op = c10::Dispatcher::singleton().findSchemaOrThrow(name.c_str(), "");
  std::vector<c10::IValue> stack = {query, key, value, attn_mask, 0.0, true, false};
  op.callBoxed(&stack);
  return {stack[0].toTensor(), stack[1].toTensor()};
}
