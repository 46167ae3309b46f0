// The runner's two ways of running a submission: started for it (main), or as
// a child forked by a zygote that loaded LibTorch once (grader/judge/zygote_protocol.h).
#pragma once

#include <string>

namespace grader {

// The runner's work for one submission: the request on fd 3, the results on
// fd 4 (wire.h). `shown_name` names the object in messages; `object_fd`, when
// not -1, is the descriptor `submission_file` reaches, closed once loaded.
int run_submission(const char* submission_file, const std::string& shown_name, bool filter, int object_fd);

// Serves spawn requests on fd 3 until the grader closes it: each forks a
// child that becomes a fresh runner's equal (its descriptors, limits, filter)
// and runs run_submission. Returns the zygote's exit status.
int serve_as_zygote(bool filter);

}  // namespace grader
