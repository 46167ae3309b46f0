// The runner's own accounting of the C heap: it replaces malloc and its
// family (ELF symbol interposition: the runner's definitions are the ones
// LibTorch, the C++ library and learner code call) and counts the bytes in
// use, so the memory a learner's call holds is measured where it is
// allocated, whoever allocates it (LibTorch's tensors, std::vector, new, a
// buffer wrapped with from_blob), not from the tensors operators return.
#pragma once

#include <cstdint>

namespace grader::heap {

// Around one call of learner code (the forward scope): the peak of bytes in
// use above the level at entry.
void scope_entered();
void scope_left();
// The largest growth of any scope since the last call, in bytes; resets it.
int64_t take_growth();

}  // namespace grader::heap
