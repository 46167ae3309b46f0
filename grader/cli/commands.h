// The sub-commands of `grade`, listed once: name, usage and help (the help
// text is made from this table), and what runs them. A first word that is no
// command is an exercise id: `grade EXERCISE` (grade_command).
#pragma once

#include <string>
#include <vector>

#include "cli/command_line.h"

namespace grader::cli {

struct Command {
  std::string name;   // the first word: "list"
  std::string usage;  // "list", "show EXERCISE [--checks]"
  std::string help;   // what it does; '\n' starts a new line of the help
  int (*run)(CommandLine& line);
};

const std::vector<Command>& commands();
const Command* find_command(const std::string& name);

// `grade EXERCISE`: one grade, a batch (--submission DIR, --seeds) or a class.
int grade_command(CommandLine& line);

// For the warm grader (warm/server.h), before it forks `line`'s command:
// where that is one grade, starts the runner's zygote it will fork from.
// Decides nothing, prints nothing; throws what reading the line throws.
void warm_runner(CommandLine& line);

// The description `grade --help` opens with: grading, then every command.
std::string usage_text();

}  // namespace grader::cli
