// A grade stopped from outside (Ctrl-C, SIGTERM, SIGHUP): it says so, kills
// the processes it started and removes its scratch folders, then exits with
// 128 + the signal (130 for Ctrl-C). Nothing half-done is left behind and no
// report is written for what was still running.
#pragma once

#include <filesystem>

namespace grader {

// Once, before the grade starts its work: a handler for the three signals
// wakes one thread, which does the above.
void stop_cleanly_on_signals();

// Whether such a stop has begun: from then on nothing is printed, and no
// report or progress file is written (what a killed run produced is no grade).
bool stop_requested();
// Where the main thread would end the process: wait for the stop to end it.
void wait_if_stopping();

// The scratch folders such a stop removes (ScratchFolder registers its own).
// track_scratch is false once a stop has begun: the caller removes the folder
// and gives up (a batch's next grade must not start).
bool track_scratch(const std::filesystem::path& folder);
void untrack_scratch(const std::filesystem::path& folder);

}  // namespace grader
