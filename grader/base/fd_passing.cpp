#include "base/fd_passing.h"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace grader {

bool send_with_fds(int socket, const void* data, size_t size, const int* fds, int count) {
  const size_t fd_bytes = sizeof(int) * static_cast<size_t>(count);
  std::vector<char> control(CMSG_SPACE(fd_bytes));
  iovec part{const_cast<void*>(data), size};
  msghdr message{};
  message.msg_iov = &part;
  message.msg_iovlen = 1;
  if (count > 0) {
    message.msg_control = control.data();
    message.msg_controllen = control.size();
    cmsghdr* header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(fd_bytes);
    std::memcpy(CMSG_DATA(header), fds, fd_bytes);
  }
  ssize_t sent;
  do {
    sent = sendmsg(socket, &message, MSG_NOSIGNAL);
  } while (sent < 0 && errno == EINTR);
  return sent == static_cast<ssize_t>(size);
}

}  // namespace grader
