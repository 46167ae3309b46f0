#include "base/profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <mutex>

#include "base/command_clock.h"

namespace grader::profile {
namespace {

struct Book {
  std::mutex mutex;
  double origin = command_started();
  std::vector<Entry> entries;
};

Book& book() {
  static Book* the = new Book;  // never destroyed: spans may end during exit
  return *the;
}

thread_local int open_spans = 0;

}  // namespace

double now() {
  auto& b = book();
  std::lock_guard<std::mutex> lock(b.mutex);
  return epoch_seconds() - b.origin;
}

Span::Span(std::string name) : name_(std::move(name)), begin_(now()), depth_(open_spans++) {}

Span::~Span() { end(); }

double Span::end() {
  if (ended_) return seconds_;
  ended_ = true;
  --open_spans;
  seconds_ = now() - begin_;
  record(name_, begin_, seconds_, depth_);
  return seconds_;
}

void record(std::string name, double begin, double seconds, int depth) {
  auto& b = book();
  std::lock_guard<std::mutex> lock(b.mutex);
  b.entries.push_back(Entry{std::move(name), begin, seconds, depth});
}

std::vector<Entry> entries() {
  auto& b = book();
  std::vector<Entry> copy;
  {
    std::lock_guard<std::mutex> lock(b.mutex);
    copy = b.entries;
  }
  // In the order they began; a span and the ones nested in it begin together
  // at the clock's resolution, the outer one first.
  std::stable_sort(copy.begin(), copy.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.depth < b.depth;
  });
  return copy;
}

std::string table(const std::string& title) {
  const auto all = entries();
  size_t width = 0;
  for (const auto& e : all) width = std::max(width, e.name.size() + 2 * static_cast<size_t>(e.depth));
  std::string out = title + "\n";
  out += fmt::format("  {:<{}}  {:>8}  {:>8}\n", "phase", width, "from s", "took s");
  for (const auto& e : all) {
    out += fmt::format("  {:<{}}  {:8.3f}  {:8.3f}\n", std::string(2 * e.depth, ' ') + e.name, width, e.begin,
                       e.seconds);
  }
  out += fmt::format("  {:<{}}  {:>8}  {:8.3f}\n", "wall time so far", width, "", now());
  return out;
}

void restart() {
  auto& b = book();
  std::lock_guard<std::mutex> lock(b.mutex);
  b.entries.clear();
  b.origin = command_started();
}

void restart_from_now() {
  auto& b = book();
  std::lock_guard<std::mutex> lock(b.mutex);
  b.entries.clear();
  b.origin = epoch_seconds();
}

}  // namespace grader::profile
