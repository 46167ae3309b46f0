// The runner's system-call filter, installed before learner code is loaded.
#pragma once

#include <string>

namespace grader {

// Whether the runner was built with libseccomp.
bool seccomp_available();

// Learner code never needs to start programs or processes, open sockets,
// trace or read other processes, or create namespaces: any of these kills the
// process with SIGSYS, which the grader reports as a forbidden system call.
// Returns an empty string on success, else why it could not be installed.
std::string install_seccomp_filter();

}  // namespace grader
