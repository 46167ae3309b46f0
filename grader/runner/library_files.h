// The runner's refusal to open LibTorch's own library files once they are
// loaded: code that read a library's symbol table from its file could call an
// operator's kernel by an address it computed, which no symbol of the
// submission names (docs/threat-model.md).
#pragma once

#include <string>
#include <vector>

namespace grader {

// The files of the loaded libraries whose names start with one of `prefixes`
// ("libtorch", "libc10"), by their real paths.
std::vector<std::string> loaded_library_files(const std::vector<std::string>& prefixes);

// A Landlock ruleset under which every file can be read but `files`: each
// entry of the folders on the way to them is allowed, the folders themselves
// and `files` not. -1 with `why` set where it cannot be made (a kernel
// without Landlock, say).
int reading_ruleset(const std::vector<std::string>& files, std::string& why);

// From now on this process cannot open LibTorch's loaded library files
// (libtorch*, libc10*) for reading, the libraries already mapped working on;
// the file of `object_fd` (the submission, passed by descriptor) stays
// readable. The ruleset is made once per process (prepare_libtorch_refusal: a
// zygote makes it before it forks). Returns an empty string on success, else
// why not (nothing is changed then).
void prepare_libtorch_refusal();
// Moves the prepared ruleset to descriptor `fd` (a zygote's child closes the
// others); the descriptor it holds, or -1 where none was prepared.
int move_libtorch_refusal(int fd);
std::string refuse_reading_libtorch(int object_fd);

}  // namespace grader
