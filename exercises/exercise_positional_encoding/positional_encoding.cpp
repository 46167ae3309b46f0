// exercise_positional_encoding: implement the sinusoidal positional encoding.
// Read README.md in this folder, then run:  ./grade exercise_positional_encoding
#include "positional_encoding.h"

SinusoidalPositionalEncodingImpl::SinusoidalPositionalEncodingImpl(int64_t d_model, int64_t max_len)
    : d_model(d_model), max_len(max_len) {
  // 1. positions 0..max_len-1 as a column, one frequency per pair of channels:
  //    exp(-log(10000) * 2i / d_model).
  // 2. sin on the even channels, cos on the odd ones (think about an odd d_model).
  // 3. register the table as a buffer named "pe" (register_buffer), not a parameter.
  TORCH_CHECK(false,
              "not implemented yet: SinusoidalPositionalEncodingImpl constructor (edit "
              "exercises/exercise_positional_encoding/positional_encoding.cpp)");
}

torch::Tensor SinusoidalPositionalEncodingImpl::forward(const torch::Tensor& x) {
  // 1. refuse an input longer than max_len with a clear error.
  // 2. add the first N rows of the table to x, broadcast over the batch, in x's dtype.
  TORCH_CHECK(false,
              "not implemented yet: SinusoidalPositionalEncodingImpl::forward (edit "
              "exercises/exercise_positional_encoding/positional_encoding.cpp)");
}
