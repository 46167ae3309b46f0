// Fixed interface for exercise_feed_forward. Do not edit: the grader compiles
// your feed_forward.cpp against this header.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

// The transformer's position-wise feed-forward sub-layer, as BERT builds it.
//
// The constructor registers, under exactly these names and nothing else (the
// grader loads weights by name): linear1 = Linear(d_model, d_ff) and
// linear2 = Linear(d_ff, d_model), both with bias, and dropout = a Dropout
// with probability `dropout`, active in training mode only.
struct PositionwiseFeedForwardImpl : torch::nn::Module {
  PositionwiseFeedForwardImpl(int64_t d_model, int64_t d_ff, double dropout = 0.1);

  // x: (B, N, d_model) -> (B, N, d_model), float32 or float64, in x's dtype
  // and on x's device; deterministic in eval mode.
  torch::Tensor forward(const torch::Tensor& x);

  torch::nn::Linear linear1{nullptr};
  torch::nn::Linear linear2{nullptr};
  torch::nn::Dropout dropout{nullptr};
};
TORCH_MODULE(PositionwiseFeedForward);
