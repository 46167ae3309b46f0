// The multiply-adds LibTorch's CPU matrix products computed, whatever operator
// reached them: the runner defines the BLAS routines LibTorch calls (sgemm_,
// dgemm_, sgemv_, dgemv_; ELF symbol interposition), counts each call's
// multiply-adds from its dimensions, and forwards it to the BLAS library.
// Products LibTorch computes without BLAS (its own small-matrix loops, oneDNN
// convolutions) are not in this count; the operator-name count covers those.
#pragma once

#include <cstdint>

namespace grader::blas {

// Multiply-adds computed through BLAS since the runner started.
uint64_t computed_macs();

}  // namespace grader::blas
