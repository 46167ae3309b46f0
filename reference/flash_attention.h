// The grader's trusted attention for exercise_flash_attention: the exact
// softmax attention, optionally causal (bottom-right aligned: query i sees
// keys j <= i + Nk - Nq, as when the queries are the last Nq tokens of the
// keys), and the same computed block by block over the keys with an online
// softmax, whose variants replay the block-wise mistakes learners make.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>

namespace reference {

struct FlashVariant {
  std::optional<double> scale;     // default 1/sqrt(d)
  bool causal_top_left = false;    // query i sees keys j <= i (only differs when Nq < Nk)
  bool causal_ignored = false;     // the causal flag has no effect
  bool stale_accumulator = false;  // the output accumulator is not rescaled when the running max grows
  bool stale_sum = false;          // the running sum is not rescaled when the running max grows
  bool last_block_dropped = false; // keys after the last full block are never visited
  // The rescale factor inverted, exp(m' - m) for exp(m - m') (1 while nothing
  // is summed yet, m = -inf), on the running sum or on the output accumulator.
  bool inverted_sum_correction = false;
  bool inverted_accumulator_correction = false;
  bool blockwise() const {
    return stale_accumulator || stale_sum || last_block_dropped || inverted_sum_correction ||
           inverted_accumulator_correction;
  }
};

// query (B, H, Nq, d), key (B, H, Nk, d), value (B, H, Nk, d_v), Nq <= Nk
// when causal. Returns (B, H, Nq, d_v). With a variant that needs the blocks
// (FlashVariant::blockwise), keys are visited block_size at a time.
at::Tensor flash_reference(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value, bool causal,
                           int64_t block_size, const FlashVariant& variant = {});

// The online-softmax recurrence itself, block_size keys at a time, with the
// variant's mistakes (used for replays, and tested against the exact form).
at::Tensor online_softmax_attention(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                                    bool causal, int64_t block_size, const FlashVariant& variant = {});

}  // namespace reference
