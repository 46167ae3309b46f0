// Hostile: guesses the results channel. Before computing anything it writes a
// plausible-looking message (a ready line, a wire-like header and a "passed"
// string) to every open file descriptor from 3 to 1023, then leaves with
// _exit(0). The real channel only accepts a strictly validated message: the
// forged bytes are malformed results, verdict runtime_error.
#include "sdpa.h"

#include <unistd.h>

#include <cstring>
#include <string>

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value, const torch::Tensor& mask) {
  std::string blob = "RUNNER-READY\nATTNWIR1";
  const unsigned char count[8] = {1, 0, 0, 0, 0, 0, 0, 0};
  blob.append(reinterpret_cast<const char*>(count), sizeof(count));
  const char fields[] = "verdict\0passed\0output\0weights\0";
  blob.append(fields, sizeof(fields) - 1);
  blob.append(256, '\0');
  // (A few hundred bytes: no pipe is full yet. No fcntl: the audit refuses
  // code that reconfigures descriptors, and this tests the channel's checks.)
  for (int fd = 3; fd < 1024; ++fd) {
    ssize_t wrote = write(fd, blob.data(), blob.size());
    (void)wrote;
  }
  _exit(0);
}
