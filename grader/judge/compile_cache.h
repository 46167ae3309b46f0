// The compile cache: compiled submissions kept by a hash of everything that
// decides them (only the compiler's products, never a verdict), the lock that
// makes a second compile of the same key wait for the first, and the bounds
// that keep the cache small.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "exercise/exercise.h"
#include "judge/toolchain.h"

namespace grader {

// A compile that failed with the compiler's errors is cached as those errors,
// with the scratch folder's path kept out (it differs per grade).
inline constexpr const char* kCachedErrors = "compiler-errors.txt";

// What decides the compiled code: the source, the interface, the compiler and
// its flags, the precompiled header and the driver it is linked with.
std::string cache_key(const Toolchain& toolchain, const Exercise& exercise, const std::string& source_text,
                      const std::vector<std::string>& argv, const std::filesystem::path& work_dir,
                      const std::filesystem::path& pch, const std::filesystem::path& driver,
                      const std::string& isolation, const std::string& stub_text);

// Copies plain files only: a scratch folder is writable from the sandbox, and
// the grader never follows a link planted there.
bool cached_copy(const std::filesystem::path& from_dir, const std::filesystem::path& to_dir,
                 const std::vector<std::string>& names);

// Stores a compiled submission; concurrent grades of the same file may race,
// the rename makes the last one win with a complete entry.
void store_in_cache(const std::filesystem::path& entry, const std::filesystem::path& work_dir,
                    const std::vector<std::string>& names);

// Keeps the cache to its newest entries, within its bounds of entries and bytes.
void prune_cache(const std::filesystem::path& dir);

// Whether a failed compile's messages are the compiler's verdict on the
// source (an error located in it), not a failure around it: the sandbox
// (`bwrap: ...`), the driver (`clang: error: ...`: no output file, no space).
// Only such a verdict is cached.
bool diagnoses_the_source(const std::string& stderr_text, const std::string& source);

// Holds an exclusive lock on a file (flock) for its lifetime; the kernel
// releases it when the process ends however it ends. Waits at most
// `patience` for another holder; without the lock (the file cannot be made,
// or the holder is stuck) the compile goes ahead unlocked.
class FileLock {
 public:
  FileLock(const std::filesystem::path& file, std::chrono::duration<double> patience);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  bool waited() const { return waited_; }  // another process held it

 private:
  int fd_ = -1;
  bool waited_ = false;
};

}  // namespace grader
