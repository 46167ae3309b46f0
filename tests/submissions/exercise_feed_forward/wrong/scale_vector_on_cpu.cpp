// Multiplies the hidden activations by a vector of ones made with torch::ones
// and no device: harmless on the CPU, a device mismatch on a GPU.
// Model answer for exercise_feed_forward: the transformer's position-wise
// feed-forward sub-layer.
//
//   FFN(x) = linear2(dropout(GELU(linear1(x))))
//
// Attention mixes information across positions; the FFN then processes each
// position on its own, with the same weights everywhere. It is where most of a
// transformer's parameters live (2 * d_model * d_ff, with d_ff typically 4 *
// d_model), and it is often read as a key-value memory: linear1's rows detect
// patterns, linear2's columns write what each pattern contributes.
//
// Read it as a walk through the focus points of exercise.yaml.
#include "feed_forward.h"

#include <torch/nn/functional/activation.h>

PositionwiseFeedForwardImpl::PositionwiseFeedForwardImpl(int64_t d_model, int64_t d_ff, double dropout) {
  // ---------------------------------------------------------------------------------
  // Focus point `layers`: widen to d_ff, come back to d_model, both with biases.
  //
  // register_module makes them part of the module: their parameters are found by
  // name ("linear1.weight", ...), trained, moved by .to() and saved.
  linear1 = register_module("linear1", torch::nn::Linear(d_model, d_ff));
  linear2 = register_module("linear2", torch::nn::Linear(d_ff, d_model));

  // ---------------------------------------------------------------------------------
  // Focus point `dropout`: a registered Dropout with the constructor's p. As a
  // module it follows module->train() / module->eval(): active in training, the
  // identity in eval mode.
  this->dropout = register_module("dropout", torch::nn::Dropout(dropout));
}

torch::Tensor PositionwiseFeedForwardImpl::forward(const torch::Tensor& x) {
  // ---------------------------------------------------------------------------------
  // Focus point `position_wise`: Linear acts on the last dimension and broadcasts over
  // every leading one, so (B, N, d_model) goes through as it is: the same network at
  // every position, and no position sees another. (Reshaping to (B * N, d_model) and
  // back is fine too, as long as the reshape keeps positions apart.)
  auto hidden = linear1->forward(x);  // (B, N, d_ff)

  // ---------------------------------------------------------------------------------
  // Focus point `activation`: the exact GELU, x * Phi(x) with the Gaussian CDF (erf).
  //
  // Without a non-linearity the two layers would collapse into one linear map. The 2017
  // paper used ReLU; GELU (BERT, GPT) is smooth and lets small negative values through.
  // torch::gelu's default is the exact form; the tanh formula ("approximate = tanh") is
  // a cheaper approximation that differs around the fourth decimal.
  // "Keep the hidden units' scale explicit": a vector of ones made with no device.
  hidden = torch::gelu(hidden) * torch::ones({hidden.size(-1)}, hidden.scalar_type());

  // Dropout on the hidden activations, between the layers. The registered module scales
  // the survivors by 1 / (1 - p) (inverted dropout), so eval mode needs no rescaling.
  hidden = dropout->forward(hidden);

  // Focus point `layers` again: return the sub-layer's output alone. The residual
  // connection and the LayerNorm around it belong to the encoder block.
  return linear2->forward(hidden);  // (B, N, d_model)
}
