// Sending open descriptors to another process over a Unix socket
// (SCM_RIGHTS): the zygote's requests (judge/zygote.h) and the warm
// grader's commands (warm/protocol.h).
#pragma once

#include <cstddef>

namespace grader {

// Sends `size` bytes with `count` descriptors attached, in one message;
// false unless all of it was sent.
bool send_with_fds(int socket, const void* data, size_t size, const int* fds, int count);

}  // namespace grader
