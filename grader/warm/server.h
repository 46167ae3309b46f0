// The warm grader (grade --warm-server FOLDER): a grader process that has
// loaded LibTorch once and keeps its runners' zygotes started, so that a
// learner's next `./grade` skips both starts (about 0.9 s of a 1.2 s grade
// on a 2-core machine; docs/performance.md). Each command it is handed runs
// in a process forked for it, exactly as the grader would run it started
// fresh: that command's arguments, working folder, environment and
// terminal; nothing of one command is left for the next but the zygotes.
//
// One per build folder and user: its socket is in FOLDER (mode 0700, owned
// by the user; another user's connection is closed unread). It ends when
// idle (GRADE_WARM_IDLE seconds, default 600), on SIGTERM, and when the
// grader's program file changes (a rebuild): it refuses the command, and
// the client runs the grader itself. grader-client (warm/client.cpp) starts
// it on first use.
#pragma once

#include <functional>
#include <string>

#include "warm/protocol.h"

namespace grader::warm {

struct ServerHooks {
  // Runs one command in the forked process, whose environment, folder and
  // standard streams are the command's; returns its exit status.
  std::function<int(int argc, char** argv)> run;
  // In the server, before a command is forked: start what it would fork its
  // runner from (never throws; nothing is decided here).
  std::function<void(const Request&)> warm_up;
};

// Serves until idle, stopped or stale; `ready_fd` (>= 0) gets one byte once
// the socket listens and is closed. Returns the server's exit status.
int serve(const std::string& folder, int ready_fd, const ServerHooks& hooks);

}  // namespace grader::warm
