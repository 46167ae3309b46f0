// Where in the learner's file an error was raised: the frames of a LibTorch
// error's backtrace that lie in the learner's object (the runner sends their
// offsets, wire::CaseReply::error_frames), mapped to file and line by
// addr2line over the object's line tables (learner code is compiled with -g1).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace grader {

// For each case's frames (nullopt: none), its place in the learner's code,
// innermost first: "mhsa.cpp:23 in MultiHeadSelfAttentionImpl::forward, called
// from mhsa.cpp:41 in ...". Only lines of `learner_file` (its name: a LibTorch
// header's inline code compiled into the object is not the learner's). Empty
// where no frame maps to such a line (no addr2line, no line tables, an offset
// outside the object). `addr2line` is the tool's path.
std::vector<std::string> error_places(const std::string& addr2line, const std::filesystem::path& object,
                                      const std::string& learner_file,
                                      const std::vector<std::optional<std::string>>& frames);

// addr2line's output for `count` addresses given with -f -C (function, then
// file:line, per address), as the places of error_places, one per address.
std::vector<std::string> parse_addr2line(const std::string& output, size_t count);

}  // namespace grader
