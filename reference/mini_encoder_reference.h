// The grader's trusted mini encoder classifier, in eval mode (every dropout is
// the identity there):
//
//   h = embedding[tokens] * sqrt(d_model) + PE[0..N)      (sinusoidal_table)
//   h = layer_{L-1}( ... layer_0(h, mask) ... , mask)     (encoder_block, post-LN, GELU)
//   pooled = sum over real tokens of h / their number     (all N tokens without a mask)
//   logits = classifier(pooled)                           (B, n_classes)
//
// Parameters by the names the learner's module registers: embedding.weight
// (V, D), layers.<i>.<encoder_block's names>, classifier.{weight,bias}. mask:
// undefined or (B, N), nonzero for a real token. Tested in
// tests/reference_test.cpp against LibTorch's Embedding, TransformerEncoderLayer
// and Linear. The variant defaults to the correct model; the grader bends one
// field at a time to replay a known learner mistake.
#pragma once

#include <ATen/core/Tensor.h>

#include <map>
#include <string>

#include "attention.h"
#include "ffn_reference.h"

namespace reference {

enum class LayerStack {
  chained,      // layer i takes layer i-1's output
  shared_last,  // one module registered n_layers times: every layer has the last-loaded weights (layers.{L-1})
  unchained,    // every layer takes the embeddings; only the last one's output is kept
};

enum class Pooling {
  masked_mean,  // average over the real tokens
  mean_all,     // average over all N positions, padding included
  sum_over_n,   // the real tokens summed, divided by N
  first_token,  // the first token's state ([CLS]-style)
};

// The layers whose self-attention gets the padding mask.
enum class MaskReach {
  every_layer,
  first_layer_only,  // layer 0 alone
  not_first_layer,   // every layer but layer 0 (with two layers: the last one only)
};

struct MiniEncoderVariant {
  bool embedding_scaled = true;  // false: no * sqrt(d_model)
  bool positions = true;         // false: no positional encoding added
  LayerStack layers = LayerStack::chained;
  MaskStage mask_stage = MaskStage::before_softmax;  // what each layer's attention does with the mask
  MaskReach mask_reach = MaskReach::every_layer;     // the others are given no mask
  Activation activation = Activation::gelu;          // relu: TransformerEncoderLayer's default kept
  Pooling pooling = Pooling::masked_mean;
  bool softmax_head = false;  // probabilities returned instead of logits
  // The model's dropout at p = 1 (training mode, the layers' dropouts at 0):
  // the embeddings plus positions all zeros before the first layer.
  bool drop_embeddings = false;
};

at::Tensor mini_encoder(const at::Tensor& tokens, const at::Tensor& mask, const std::map<std::string, at::Tensor>& p,
                        int64_t num_heads, int64_t num_layers, const MiniEncoderVariant& variant = {});

// The final token states (B, N, D), before pooling: what the pooling probe reads against.
at::Tensor mini_encoder_states(const at::Tensor& tokens, const at::Tensor& mask,
                               const std::map<std::string, at::Tensor>& p, int64_t num_heads, int64_t num_layers,
                               const MiniEncoderVariant& variant = {});

}  // namespace reference
