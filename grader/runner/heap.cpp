#include "runner/heap.h"

#include <malloc.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>

// glibc's own allocator, under the names it keeps for replacements.
extern "C" {
void* __libc_malloc(size_t size);
void __libc_free(void* pointer);
void* __libc_calloc(size_t count, size_t size);
void* __libc_realloc(void* pointer, size_t size);
void* __libc_memalign(size_t alignment, size_t size);
}

namespace {

std::atomic<int64_t> in_use{0};  // may dip below zero: memory allocated before counting began
std::atomic<int64_t> peak{0};
std::atomic<int64_t> base{0};
std::atomic<int64_t> growth{0};

inline void added(void* pointer) {
  if (!pointer) return;
  const auto size = static_cast<int64_t>(malloc_usable_size(pointer));
  const auto now = in_use.fetch_add(size, std::memory_order_relaxed) + size;
  auto high = peak.load(std::memory_order_relaxed);
  while (now > high && !peak.compare_exchange_weak(high, now, std::memory_order_relaxed)) {
  }
}

inline void removed(void* pointer) {
  if (pointer) in_use.fetch_sub(static_cast<int64_t>(malloc_usable_size(pointer)), std::memory_order_relaxed);
}

bool power_of_two(size_t value) { return value != 0 && (value & (value - 1)) == 0; }

}  // namespace

extern "C" {

void* malloc(size_t size) {
  void* pointer = __libc_malloc(size);
  added(pointer);
  return pointer;
}

void free(void* pointer) {
  removed(pointer);
  __libc_free(pointer);
}

void* calloc(size_t count, size_t size) {
  void* pointer = __libc_calloc(count, size);
  added(pointer);
  return pointer;
}

void* realloc(void* pointer, size_t size) {
  const auto before = pointer ? static_cast<int64_t>(malloc_usable_size(pointer)) : 0;
  void* moved = __libc_realloc(pointer, size);
  if (!moved) return nullptr;  // the old block stays, still counted (or it was freed by size 0)
  in_use.fetch_sub(before, std::memory_order_relaxed);
  added(moved);
  return moved;
}

void* memalign(size_t alignment, size_t size) {
  void* pointer = __libc_memalign(alignment, size);
  added(pointer);
  return pointer;
}

void* aligned_alloc(size_t alignment, size_t size) { return memalign(alignment, size); }

int posix_memalign(void** result, size_t alignment, size_t size) {
  if (!power_of_two(alignment) || alignment % sizeof(void*) != 0) return EINVAL;
  void* pointer = memalign(alignment, size);
  if (!pointer && size != 0) return ENOMEM;
  *result = pointer;
  return 0;
}

void* valloc(size_t size) { return memalign(static_cast<size_t>(sysconf(_SC_PAGESIZE)), size); }

void* pvalloc(size_t size) {
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return memalign(page, (size + page - 1) / page * page);
}

}  // extern "C"

namespace grader::heap {

void scope_entered() {
  const auto now = in_use.load(std::memory_order_relaxed);
  base.store(now, std::memory_order_relaxed);
  peak.store(now, std::memory_order_relaxed);
}

void scope_left() {
  const auto grown = peak.load(std::memory_order_relaxed) - base.load(std::memory_order_relaxed);
  auto high = growth.load(std::memory_order_relaxed);
  while (grown > high && !growth.compare_exchange_weak(high, grown, std::memory_order_relaxed)) {
  }
}

int64_t take_growth() { return growth.exchange(0, std::memory_order_relaxed); }

}  // namespace grader::heap
