#include "judge/compile_cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <sstream>
#include <thread>

#include "judge/compile_step.h"
#include "base/sha256.h"

namespace grader {
namespace fs = std::filesystem;

std::string cache_key(const Toolchain& toolchain, const Exercise& exercise, const std::string& source_text,
                      const std::vector<std::string>& argv, const fs::path& work_dir, const fs::path& pch,
                      const fs::path& driver, const std::string& isolation, const std::string& stub_text) {
  Sha256 hash;
  auto add = [&hash](const std::string& part) {
    hash.update(std::to_string(part.size()) + ":");
    hash.update(part);
  };
  auto add_stamp = [&add](const fs::path& file) {  // large built files: path, size and time
    std::error_code error;
    auto size = fs::file_size(file, error);
    auto time = fs::last_write_time(file, error).time_since_epoch().count();
    add(file.string() + " " + std::to_string(size) + " " + std::to_string(time));
  };
  add("grader compile cache v3");
  add(isolation);  // what isolated the compiler that produced the entry
  add(source_text);
  add(stub_text);  // a compile ahead's stub (empty: the source compiled as itself)
  add(read_file(exercise.dir / exercise.interface_header));
  add(read_file(toolchain.flags_file));
  for (const auto& arg : argv) add(replace_all(arg, work_dir.string(), "<scratch>"));
  add_stamp(argv.front());  // the compiler
  if (!pch.empty()) add_stamp(pch);
  add_stamp(driver);  // several MB: reading it on every grade would cost more than the stamp says
  return hash.hex();
}

bool cached_copy(const fs::path& from_dir, const fs::path& to_dir, const std::vector<std::string>& names) {
  std::error_code error;
  for (const auto& name : names) {
    if (fs::symlink_status(from_dir / name, error).type() != fs::file_type::regular) return false;
    fs::copy_file(from_dir / name, to_dir / name, fs::copy_options::overwrite_existing, error);
    if (error) return false;
  }
  return true;
}

namespace {

// The cache's bounds: an entry larger than this is not stored (a correct
// submission compiles to a few MB), and the oldest entries go beyond these.
constexpr uintmax_t kCacheEntryMaxBytes = 64ull << 20;
constexpr uintmax_t kCacheMaxBytes = 1ull << 30;
constexpr size_t kCacheMaxEntries = 200;

uintmax_t entry_bytes(const fs::path& entry) {
  std::error_code error;
  uintmax_t total = 0;
  for (const auto& file : fs::directory_iterator(entry, error)) {
    auto size = fs::file_size(file.path(), error);
    if (!error) total += size;
  }
  return total;
}

}  // namespace

void store_in_cache(const fs::path& entry, const fs::path& work_dir, const std::vector<std::string>& names) {
  std::error_code error;
  uintmax_t bytes = 0;
  for (const auto& name : names) bytes += fs::file_size(work_dir / name, error);
  if (error || bytes > kCacheEntryMaxBytes) return;
  static std::atomic<unsigned> counter{0};  // unique per grade, also between --jobs threads
  auto staging = entry.parent_path() /
                 (entry.filename().string() + ".tmp-" + std::to_string(getpid()) + "-" + std::to_string(counter++));
  fs::create_directories(staging, error);
  if (error || !cached_copy(work_dir, staging, names)) {
    fs::remove_all(staging, error);
    return;
  }
  fs::remove_all(entry, error);
  fs::rename(staging, entry, error);
  if (error) fs::remove_all(staging, error);
}

void prune_cache(const fs::path& dir) {
  std::error_code error;
  std::vector<std::pair<fs::file_time_type, fs::path>> entries;
  const auto stale = fs::file_time_type::clock::now() - std::chrono::hours(1);
  for (const auto& entry : fs::directory_iterator(dir, error)) {
    const auto name = entry.path().filename().string();
    if (name.find(".tmp-") != std::string::npos) continue;  // being written
    if (name.size() > 5 && name.compare(name.size() - 5, 5, ".lock") == 0) {
      // A compile's lock (compile_submission), kept while one may hold it.
      auto entry_dir = entry.path();
      entry_dir.replace_extension();
      if (!fs::exists(entry_dir, error) && fs::last_write_time(entry.path(), error) < stale)
        fs::remove(entry.path(), error);
      continue;
    }
    entries.emplace_back(fs::last_write_time(entry.path(), error), entry.path());
  }
  std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  uintmax_t total = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    total += entry_bytes(entries[i].second);
    if (i >= kCacheMaxEntries || total > kCacheMaxBytes) fs::remove_all(entries[i].second, error);
  }
}

bool diagnoses_the_source(const std::string& stderr_text, const std::string& source) {
  bool located = false;
  std::istringstream lines(stderr_text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("bwrap:", 0) == 0 || line.rfind("clang: ", 0) == 0 || line.rfind("clang++: ", 0) == 0 ||
        line.find("unable to open output") != std::string::npos || line.find("fatal error: ") != std::string::npos) {
      return false;
    }
    if (line.rfind(source + ":", 0) == 0 && line.find(": error: ") != std::string::npos) located = true;
  }
  return located;
}

FileLock::FileLock(const fs::path& file, std::chrono::duration<double> patience) {
  fd_ = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd_ < 0) return;
  ::futimens(fd_, nullptr);  // in use now: the cache's pruning keeps it
  if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) return;
  waited_ = true;
  const auto deadline = std::chrono::steady_clock::now() + patience;
  while (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    if ((errno != EWOULDBLOCK && errno != EINTR) || std::chrono::steady_clock::now() > deadline) {
      ::close(fd_);
      fd_ = -1;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock
}

}  // namespace grader
