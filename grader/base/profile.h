// Where one command's wall time goes (`grade ... --profile`): spans of named
// work, each with when it began (seconds from the command's start, as the
// report's footer counts) and how long it took. Spans may overlap (the
// runner starts while the submission compiles); the table lists them in the
// order they began. Recording costs a clock read and a lock: always on.
#pragma once

#include <string>
#include <vector>

namespace grader::profile {

struct Entry {
  std::string name;
  double begin = 0;    // seconds from the command's start
  double seconds = 0;  // how long it took
  int depth = 0;       // nested under the span open on its thread when it began
};

// A span of work: it begins when made and is recorded when it ends (its
// destructor, or end()).
class Span {
 public:
  explicit Span(std::string name);
  ~Span();
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;
  // Records it now (once; the destructor does nothing after it) and returns
  // how long it took.
  double end();

 private:
  std::string name_;
  double begin_ = 0;
  int depth_ = 0;
  bool ended_ = false;
  double seconds_ = 0;
};

// A span measured elsewhere (the grade script's own part, from the times it
// exported), recorded as given.
void record(std::string name, double begin, double seconds, int depth = 0);

// Seconds from the table's origin to now: the command's start
// (command_clock.h) until restart() moves it.
double now();

// Every span recorded so far, in the order they began.
std::vector<Entry> entries();

// The table: one line per span, indented by depth, then the command's wall
// time so far; `title` heads it.
std::string table(const std::string& title);

// Forgets every span and counts from the command's start (a process forked
// for a command, warm/server.h), or from now (the next grade of grade watch).
void restart();
void restart_from_now();

}  // namespace grader::profile
