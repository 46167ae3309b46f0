// Fixed interface for @ID@. Do not edit: the grader compiles your
// @NAME@.cpp against this header.
#pragma once

#include <torch/types.h>

// TODO what the function computes.
//
//   x: (B, N, D)
//
// Returns the output: (B, N, D).
torch::Tensor @NAME@(const torch::Tensor& x);
