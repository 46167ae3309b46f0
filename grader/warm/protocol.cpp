#include "warm/protocol.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "base/fd_passing.h"

namespace grader::warm {
namespace {

void put(std::string& out, const std::string& field) {
  out += field;
  out += '\0';
}

// The NUL-ended strings of `bytes`; nullopt where the last is not ended.
std::optional<std::vector<std::string>> fields_of(const std::string& bytes) {
  std::vector<std::string> fields;
  size_t at = 0;
  while (at < bytes.size()) {
    const size_t end = bytes.find('\0', at);
    if (end == std::string::npos) return std::nullopt;
    fields.push_back(bytes.substr(at, end - at));
    at = end + 1;
  }
  return fields;
}

std::optional<long> number(const std::string& text) {
  if (text.empty() || text.size() > 9) return std::nullopt;
  long value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  return value;
}

bool read_all(int fd, char* into, size_t size) {
  size_t got = 0;
  while (got < size) {
    const ssize_t n = read(fd, into + got, size - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    got += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

std::string encode(const Request& request) {
  std::string out;
  put(out, kVersion);
  put(out, std::to_string(request.client_pid));
  put(out, request.working_dir);
  char mask[8];
  std::snprintf(mask, sizeof mask, "%o", request.umask & 0777u);
  put(out, mask);
  put(out, std::to_string(request.argv.size()));
  for (const auto& arg : request.argv) put(out, arg);
  for (const auto& var : request.env) put(out, var);
  return out;
}

std::optional<Request> decode(const std::string& bytes) {
  constexpr size_t kHead = 5;  // version, pid, folder, umask, argc
  auto fields = fields_of(bytes);
  if (!fields || fields->size() < kHead || (*fields)[0] != kVersion) return std::nullopt;
  const auto pid = number((*fields)[1]);
  const auto argc = number((*fields)[4]);
  if (!pid || *pid <= 0 || !argc || *argc < 1 || static_cast<size_t>(*argc) > fields->size() - kHead) {
    return std::nullopt;
  }
  const std::string& mask = (*fields)[3];
  if (mask.empty() || mask.size() > 3 || mask.find_first_not_of("01234567") != std::string::npos) return std::nullopt;
  Request request;
  request.client_pid = static_cast<pid_t>(*pid);
  request.working_dir = (*fields)[2];
  request.umask = static_cast<unsigned>(std::stoul(mask, nullptr, 8));
  const auto first_env = fields->begin() + static_cast<std::ptrdiff_t>(kHead) + *argc;
  request.argv.assign(fields->begin() + static_cast<std::ptrdiff_t>(kHead), first_env);
  request.env.assign(first_env, fields->end());
  for (const auto& var : request.env) {
    if (var.find('=') == std::string::npos || var.front() == '=') return std::nullopt;
  }
  if (request.working_dir.empty() || request.working_dir.front() != '/') return std::nullopt;
  return request;
}

std::string folder_for(const std::string& build_dir, uid_t uid) {
  return build_dir + "/.warm-" + std::to_string(uid);
}

std::string unavailable_in(const std::string& folder) { return folder + "/unavailable"; }

void say_unavailable(const std::string& folder, const std::string& why) {
  if (FILE* note = std::fopen(unavailable_in(folder).c_str(), "w")) {
    std::fprintf(note, "%s\n", why.c_str());
    std::fclose(note);
  }
}

std::string socket_in(const std::string& folder) {
  const std::string path = folder + "/socket";
  return path.size() < sizeof(sockaddr_un{}.sun_path) ? path : std::string();
}

bool private_folder(const std::string& folder) {
  if (mkdir(folder.c_str(), 0700) != 0 && errno != EEXIST) return false;
  struct stat st {};
  return lstat(folder.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() && (st.st_mode & 077) == 0;
}

bool write_all(int fd, const void* bytes, size_t size) {
  const char* at = static_cast<const char*>(bytes);
  while (size > 0) {
    const ssize_t n = write(fd, at, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    at += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

bool send_with_fds(int socket, const std::string& bytes, const int* fds, int count) {
  // The length carries the descriptors; the bytes follow.
  const uint32_t length = static_cast<uint32_t>(bytes.size());
  const unsigned char head[4] = {static_cast<unsigned char>(length), static_cast<unsigned char>(length >> 8),
                                 static_cast<unsigned char>(length >> 16), static_cast<unsigned char>(length >> 24)};
  return grader::send_with_fds(socket, head, sizeof head, fds, count) && write_all(socket, bytes.data(), bytes.size());
}

bool receive_request(int socket, std::string& bytes, std::vector<int>& fds, int max_fds) {
  unsigned char head[4];
  iovec part{head, sizeof head};
  std::vector<char> control(CMSG_SPACE(sizeof(int) * static_cast<size_t>(max_fds)));
  msghdr message{};
  message.msg_iov = &part;
  message.msg_iovlen = 1;
  message.msg_control = control.data();
  message.msg_controllen = control.size();
  ssize_t got;
  do {
    got = recvmsg(socket, &message, MSG_WAITALL | MSG_CMSG_CLOEXEC);
  } while (got < 0 && errno == EINTR);
  fds.clear();
  for (cmsghdr* header = CMSG_FIRSTHDR(&message); header; header = CMSG_NXTHDR(&message, header)) {
    if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) continue;
    const size_t n = (header->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < n; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(header) + i * sizeof(int), sizeof fd);
      fds.push_back(fd);
    }
  }
  auto fail = [&fds] {
    for (int fd : fds) close(fd);
    fds.clear();
    return false;
  };
  if (got != static_cast<ssize_t>(sizeof head) || (message.msg_flags & MSG_CTRUNC)) return fail();
  const uint32_t length = head[0] | (head[1] << 8) | (head[2] << 16) | (static_cast<uint32_t>(head[3]) << 24);
  if (length > kMaxRequestBytes) return fail();
  bytes.assign(length, '\0');
  if (length > 0 && !read_all(socket, bytes.data(), length)) return fail();
  return true;
}

std::string status_message(char kind, int value) {
  const auto v = static_cast<uint32_t>(value);
  std::string out(1, kind);
  for (int shift = 0; shift < 32; shift += 8) out += static_cast<char>((v >> shift) & 0xff);
  return out;
}

bool parse_status(const std::string& five_bytes, char& kind, int& value) {
  if (five_bytes.size() != 5 || (five_bytes[0] != kExited && five_bytes[0] != kSignalled)) return false;
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(static_cast<unsigned char>(five_bytes[1 + i])) << (8 * i);
  kind = five_bytes[0];
  value = static_cast<int>(v);
  return value >= 0 && value < 256;
}

}  // namespace grader::warm
