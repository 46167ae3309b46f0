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

// A small transformer encoder that classifies a token sequence:
//
//   h = embedding(tokens) * sqrt(d_model) + PE[0..N)   (sinusoidal, as in exercise_positional_encoding)
//   h = dropout(h)
//   h = layers[n_layers - 1]( ... layers[0](h, mask) ..., mask)
//   pooled = the mean of h over the real tokens of each sequence
//   logits = classifier(pooled)                        (B, n_classes): no softmax
//
// Registered under exactly these names (the grader loads weights by name):
//   embedding    Embedding(vocab_size, d_model)
//   pe           a registered buffer (max_len, d_model) with the sinusoidal table
//   dropout      Dropout(dropout), on the embeddings plus positions
//   layers       ModuleList of n_layers distinct TransformerEncoderLayer(d_model, n_heads)
//                with dim_feedforward d_ff, the constructor's dropout and GELU
//                (its default activation is ReLU)
//   classifier   Linear(d_model, n_classes)
// TransformerEncoderLayer takes (N, B, d_model) and a src_key_padding_mask (B, N)
// that is true where a key must be ignored. torch::nn::TransformerEncoder is not allowed.
struct MiniEncoderImpl : torch::nn::Module {
  MiniEncoderImpl(int64_t vocab_size, int64_t d_model = 128, int64_t n_heads = 4, int64_t d_ff = 256,
                  int64_t n_layers = 2, int64_t n_classes = 2, double dropout = 0.1, int64_t max_len = 512);

  // tokens: (B, N) int64 ids below vocab_size. mask: undefined (every token is
  // real) or (B, N), 1 (or true) for a real token and 0 for padding, which
  // neither attention nor the pooling may use. Returns logits (B, n_classes).
  torch::Tensor forward(const torch::Tensor& tokens, const torch::Tensor& mask = {});

  torch::nn::Embedding embedding{nullptr};
  torch::nn::Dropout dropout{nullptr};
  torch::nn::ModuleList layers{nullptr};
  torch::nn::Linear classifier{nullptr};
  torch::Tensor pe;
};
TORCH_MODULE(MiniEncoder);
