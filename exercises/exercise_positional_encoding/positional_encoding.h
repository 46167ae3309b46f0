// Fixed interface for exercise_positional_encoding. Do not edit: the grader
// compiles your positional_encoding.cpp against this header.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

// Sinusoidal positional encoding ("Attention Is All You Need", section 3.5),
// added to a batch of token embeddings:
//
//   PE[pos][2i]     = sin(pos / 10000^(2i / d_model))
//   PE[pos][2i + 1] = cos(pos / 10000^(2i / d_model))      pos = 0, 1, ...
//
// The constructor computes PE for positions 0..max_len-1 once and registers it
// as a buffer named "pe", shape (max_len, d_model) or (1, max_len, d_model): not
// a parameter (it is never trained), but part of the module's state (it moves
// with .to() and is saved with the module). An odd d_model must either work
// (the last channel is then a sine) or be refused with an error naming d_model.
struct SinusoidalPositionalEncodingImpl : torch::nn::Module {
  explicit SinusoidalPositionalEncodingImpl(int64_t d_model, int64_t max_len = 5000);

  // x: (B, N, d_model) -> x + PE[0..N-1], broadcast over the batch, in x's
  // dtype. N > max_len must throw an error that names max_len.
  torch::Tensor forward(const torch::Tensor& x);

  int64_t d_model;
  int64_t max_len;
  torch::Tensor pe;
};
TORCH_MODULE(SinusoidalPositionalEncoding);
