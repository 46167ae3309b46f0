// The warm grader's conversation (docs/how-a-grade-works.md, "The warm
// grader"): `grade` hands its command to a grader that has LibTorch loaded
// and its runners' zygotes started, over a Unix socket in a folder only its
// user can open. Shared by the client (grader-client, no LibTorch) and the
// server (grade --warm-server).
//
//   client -> server  one request: a 4-byte length, then NUL-ended strings
//                     (kVersion, the client's pid, its working folder, its
//                     umask in octal, argc, the arguments, then the
//                     environment), with the
//                     client's standard input, output and error attached
//                     (SCM_RIGHTS) to the request's first bytes
//   server -> client  kAccepted, or kRefused (the server is stale or ending:
//                     the client runs the grader itself)
//   client -> server  a signal number byte, for each Ctrl-C, SIGTERM or
//                     SIGHUP the client got (the grade stops as it would)
//   server -> client  kExited and the exit status, or kSignalled and the
//                     signal the grade ended by (4 bytes, little-endian)
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace grader::warm {

inline constexpr const char* kVersion = "grade-warm 2";
inline constexpr char kAccepted = 'a';
inline constexpr char kRefused = 'r';
inline constexpr char kExited = 'x';
inline constexpr char kSignalled = 's';
// A request larger than this is refused (the kernel's own limit on the
// arguments and environment of a program is 2 MiB by default).
inline constexpr uint32_t kMaxRequestBytes = 8u << 20;

struct Request {
  pid_t client_pid = -1;
  std::string working_dir;
  unsigned umask = 022;           // the client's: files the command writes get the modes they would
  std::vector<std::string> argv;  // argv[0]: the grader the client would have run
  std::vector<std::string> env;   // NAME=value
};

std::string encode(const Request& request);
// nullopt: not a request of this version (or malformed).
std::optional<Request> decode(const std::string& bytes);

// Where the warm grader of `build_dir` listens for the calling user: a
// folder of its own (mode 0700) under the build folder, and the socket in
// it. Empty where the path is too long for a Unix socket.
std::string folder_for(const std::string& build_dir, uid_t uid);
std::string socket_in(const std::string& folder);
// The file a server that cannot serve here (a CUDA LibTorch, an old kernel)
// leaves in the folder, with its reason (say_unavailable): the client then
// runs the grader itself without starting a server, until the grader is rebuilt.
std::string unavailable_in(const std::string& folder);
void say_unavailable(const std::string& folder, const std::string& why);
// Makes `folder` where missing; whether it is a directory (not a link) of
// this user's that nobody else may enter.
bool private_folder(const std::string& folder);

// Sends `bytes` with `fds` attached; false on any failure.
bool send_with_fds(int socket, const std::string& bytes, const int* fds, int count);
// Reads one request (its length, then its bytes) with up to `max_fds`
// descriptors attached to its first bytes (closed on failure). False on any
// failure, a length over kMaxRequestBytes included.
bool receive_request(int socket, std::string& bytes, std::vector<int>& fds, int max_fds);

// One status message (kExited or kSignalled and its number).
std::string status_message(char kind, int value);
bool parse_status(const std::string& five_bytes, char& kind, int& value);

// write() of all of `bytes`, retried on EINTR; false on failure.
bool write_all(int fd, const void* bytes, size_t size);

}  // namespace grader::warm
