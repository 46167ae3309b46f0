// Small text helpers the grader's parts share.
#pragma once

#include <string>

namespace grader {

// `text` with every `from` replaced by `to`, left to right (a replacement is
// not searched again); `from` empty: `text` as it is.
inline std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  if (from.empty()) return text;
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

}  // namespace grader
