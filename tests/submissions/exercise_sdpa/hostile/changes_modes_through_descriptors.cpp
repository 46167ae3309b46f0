// Hostile: changes a file's mode, owner and attributes through a descriptor
// (fchmod, fchown, fsetxattr), the variants of chmod and friends that take no
// path. It tries on its working folder; if any call succeeds it throws, so the
// grade fails. The system-call filter refuses them in every sandbox mode
// (without namespaces, as root, they reached files outside the scratch):
// every call fails, the result is correct, verdict passed.
#include "sdpa.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cmath>
#include <stdexcept>
#include <string>

namespace {

void try_descriptor_calls() {
  int fd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  std::string done;
  if (fchmod(fd, 0777) == 0) done += " fchmod";
  if (fchown(fd, getuid(), getgid()) == 0) done += " fchown";
  if (fsetxattr(fd, "user.grader_probe", "x", 1, 0) == 0) done += " fsetxattr";
  close(fd);
  if (!done.empty()) throw std::runtime_error("changed the working folder through a descriptor:" + done);
}

}  // namespace

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(const torch::Tensor& query,
                                                                       const torch::Tensor& key,
                                                                       const torch::Tensor& value,
                                                                       const torch::Tensor& mask) {
  try_descriptor_calls();
  auto scores = torch::matmul(query, key.transpose(-2, -1)) / std::sqrt(static_cast<double>(query.size(-1)));
  if (mask.defined()) scores = scores.masked_fill(mask == 0, -INFINITY);
  auto weights = torch::softmax(scores, -1);
  return {torch::matmul(weights, value), weights};
}
