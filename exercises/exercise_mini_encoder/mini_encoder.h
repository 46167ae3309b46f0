// Fixed interface for exercise_mini_encoder. Do not edit: the grader compiles
// your mini_encoder.cpp against this header.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/transformerlayer.h>
#include <torch/nn/pimpl.h>

// A small transformer encoder that classifies a token sequence: token
// embeddings with their positions (the sinusoidal encoding of
// exercise_positional_encoding), a stack of n_layers encoder layers, mean
// pooling into one vector per sequence, and a linear classifier.
//
// Registered under exactly these names (the grader loads weights by name):
//   embedding    Embedding(vocab_size, d_model)
//   pe           the sinusoidal table (max_len, d_model), registered under "pe"
//   dropout      Dropout(dropout)
//   layers       ModuleList of n_layers TransformerEncoderLayer(d_model, n_heads)
//                with dim_feedforward d_ff, the constructor's dropout and GELU
//                (its default activation is ReLU)
//   classifier   Linear(d_model, n_classes)
// Every dropout is active in training mode only. torch::nn::TransformerEncoder
// is not allowed.
struct MiniEncoderImpl : torch::nn::Module {
  MiniEncoderImpl(int64_t vocab_size, int64_t d_model = 128, int64_t n_heads = 4, int64_t d_ff = 256,
                  int64_t n_layers = 2, int64_t n_classes = 2, double dropout = 0.1, int64_t max_len = 512);

  // tokens: (B, N) int64 ids below vocab_size, N <= max_len. mask: undefined
  // (every token is real) or (B, N), 1 (or true) for a real token and 0 for
  // padding. Returns logits (B, n_classes), in the module's dtype.
  torch::Tensor forward(const torch::Tensor& tokens, const torch::Tensor& mask = {});

  torch::nn::Embedding embedding{nullptr};
  torch::nn::Dropout dropout{nullptr};
  torch::nn::ModuleList layers{nullptr};
  torch::nn::Linear classifier{nullptr};
  torch::Tensor pe;
};
TORCH_MODULE(MiniEncoder);
