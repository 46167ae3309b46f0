// exercise_feed_forward: implement the position-wise feed-forward network.
// Read README.md in this folder, then run:  ./grade exercise_feed_forward
#include "feed_forward.h"

PositionwiseFeedForwardImpl::PositionwiseFeedForwardImpl(int64_t d_model, int64_t d_ff, double dropout) {
  // Create and register linear1 (Linear(d_model, d_ff)), linear2 (Linear(d_ff, d_model))
  // and dropout (Dropout(dropout)) under exactly those names.
  TORCH_CHECK(false,
              "not implemented yet: PositionwiseFeedForwardImpl constructor (edit "
              "exercises/exercise_feed_forward/feed_forward.cpp)");
}

torch::Tensor PositionwiseFeedForwardImpl::forward(const torch::Tensor& x) {
  // linear1, then the exact GELU, then dropout, then linear2.
  TORCH_CHECK(false,
              "not implemented yet: PositionwiseFeedForwardImpl::forward (edit "
              "exercises/exercise_feed_forward/feed_forward.cpp)");
}
