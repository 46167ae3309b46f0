// Lines of fields inside a wire string: how text the learner chooses (a
// module's or buffer's name, an operator's name) travels beside numbers
// without being read as numbers. Each field is escaped so that it holds no
// blank, line break or '%' (those bytes, and every other control byte, become
// %XX; an empty field is a lone '%'); fields are joined by one blank, lines
// end with '\n'. Reading never throws: a number that does not read is std::nullopt, for the caller to
// treat as the learner's (a malformed record), never as a grader fault.
// Header-only: the exercises' drivers, compiled apart from the grader (and
// loaded into a runner that exports nothing), write and read fields too.
#pragma once

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace grader::wire {

inline std::string escape_field(std::string_view text) {
  static const char* const kHex = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte > ' ' && byte != '%' && byte != 0x7f) {
      out += c;
      continue;
    }
    out += '%';
    out += kHex[byte >> 4];
    out += kHex[byte & 15];
  }
  // An empty field would vanish between two blanks: a lone '%' (which no
  // escaped byte is) stands for it.
  return out.empty() ? "%" : out;
}

// One line: the fields escaped and joined by blanks, ending in '\n'.
inline std::string fields_line(const std::vector<std::string>& fields) {
  std::string line;
  for (const auto& field : fields) line += (line.empty() ? "" : " ") + escape_field(field);
  return line + '\n';
}

namespace detail {

inline int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

}  // namespace detail

// The inverse of escape_field; a '%' not followed by two hex digits is kept
// as it is.
inline std::string unescape_field(std::string_view field) {
  if (field == "%") return "";
  std::string out;
  out.reserve(field.size());
  for (size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '%' && i + 2 < field.size()) {
      const int high = detail::hex_value(field[i + 1]), low = detail::hex_value(field[i + 2]);
      if (high >= 0 && low >= 0) {
        out += static_cast<char>(high * 16 + low);
        i += 2;
        continue;
      }
    }
    out += field[i];
  }
  return out;
}

// Every line of `text`, each split at blanks and unescaped; empty lines are skipped.
inline std::vector<std::vector<std::string>> field_lines(std::string_view text) {
  std::vector<std::vector<std::string>> lines;
  size_t start = 0;
  while (start < text.size()) {
    auto end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::vector<std::string> fields;
    size_t at = start;
    while (at < end) {
      auto blank = text.find(' ', at);
      if (blank == std::string_view::npos || blank > end) blank = end;
      if (blank > at) fields.push_back(unescape_field(text.substr(at, blank - at)));
      at = blank + 1;
    }
    if (!fields.empty()) lines.push_back(std::move(fields));
    start = end + 1;
  }
  return lines;
}

// A whole field as a number, or nothing (no throwing, no partial reads).
inline std::optional<double> number_field(std::string_view field) {
  if (field.empty() || field.size() > 64 || field[0] == ' ' || field[0] == '\t') return std::nullopt;
  const std::string text(field);
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || errno == ERANGE || !std::isfinite(value)) return std::nullopt;
  return value;
}

inline std::optional<int64_t> integer_field(std::string_view field) {
  if (field.empty() || field.size() > 24 || field[0] == ' ' || field[0] == '\t') return std::nullopt;
  const std::string text(field);
  char* end = nullptr;
  errno = 0;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  if (end != text.c_str() + text.size() || errno == ERANGE) return std::nullopt;
  return static_cast<int64_t>(value);
}

}  // namespace grader::wire
