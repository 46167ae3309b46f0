// How the grader and a runner zygote talk (grader/judge/zygote.h starts one,
// grader/runner/zygote.cpp is the runner's side). A zygote is a runner that
// has loaded LibTorch once and forks one fresh child per submission, so a
// grade does not pay LibTorch's start (about half a second of CPU) again.
//
//   grader -> zygote, on the control socket (fd 3 of the zygote; SOCK_SEQPACKET):
//       one SpawnRequest, with the descriptors of Fd (SCM_RIGHTS, in that order)
//   child -> grader, on its status socket: kHello, and the kernel attaches the
//       child's credentials (SO_PASSCRED): its pid in the grader's namespace
//   grader -> child: kGo once the child is in its cgroup (anything else: exit)
//   zygote -> grader, on the status socket, when it has reaped the child:
//       its wait status (int32)
//
// The child closes its status socket and every descriptor of the zygote's
// before any learner code runs: what learner code could write there (a wait
// status of its choosing) never reaches the grader.
#pragma once

#include <cstdint>

namespace grader::zygote {

constexpr uint32_t kMagic = 0x5a79676fu;  // "Zygo"

// Descriptors passed with a SpawnRequest; the child gets stdout on 1, stderr
// on 2, the request on 3 and the result channel on 4, as a fresh runner does.
enum Fd : int { kStatus, kStdout, kStderr, kRequest, kResult, kObject, kFdCount };

struct SpawnRequest {
  uint32_t magic = kMagic;
  uint32_t cpu_seconds = 0;           // RLIMIT_CPU (soft; the hard limit is 2 s more)
  uint64_t file_size_bytes = 0;       // RLIMIT_FSIZE
  uint64_t address_space_bytes = 0;   // RLIMIT_AS; 0: none
  char object_name[1024] = {};        // the compiled submission's path in the grader's view (messages name it)
};

struct Hello {
  char tag = 'h';
  uint64_t inherited_anon_bytes = 0;  // the zygote's private memory the child shares (RssAnon at fork)
  double start_cpu_seconds = 0;       // the CPU the zygote's start took (a fresh runner's count holds it)
};

constexpr char kGo = 'g';

}  // namespace grader::zygote
