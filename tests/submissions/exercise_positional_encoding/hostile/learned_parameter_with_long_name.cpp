// HOSTILE (round-5 red team): a learned positional encoding, the table times
// a trainable scale that starts at 1 (every output matches), registered under a
// name 5000 characters long. The parent once cut each string of the driver's
// results to 4 KiB: the list of parameters read as empty, and "the encoding is
// fixed, not learned" passed.
#include "positional_encoding.h"

#include <cmath>

SinusoidalPositionalEncodingImpl::SinusoidalPositionalEncodingImpl(int64_t d_model, int64_t max_len)
    : d_model(d_model), max_len(max_len) {
  TORCH_CHECK(d_model > 0 && max_len > 0, "SinusoidalPositionalEncoding: d_model and max_len must be positive, got ",
              d_model, " and ", max_len);
  // The table is computed once, in float64 (so that it is exact to the last bit
  // whatever dtype the module is used in later), then kept as a buffer.
  const auto options = torch::TensorOptions().dtype(torch::kDouble);

  // ---------------------------------------------------------------------------------
  // Focus point `frequencies`: one frequency per pair of channels.
  //
  // w_i = exp(-ln(10000) * 2i / d_model) = 10000^(-2i / d_model), for i = 0, 1, ...
  // arange(0, d_model, 2) produces the 2i directly. Two classic slips: arange over
  // the pair index without the factor 2 (the wavelengths then stop at 100 * 2*pi),
  // and log10 instead of the natural log (every frequency off).
  auto two_i = torch::arange(0, d_model, 2, options);  // ceil(d_model / 2) values
  auto frequency = torch::exp(two_i * (-std::log(10000.0) / static_cast<double>(d_model)));

  // ---------------------------------------------------------------------------------
  // Focus point `positions`: 0, 1, ..., max_len - 1. The first token is position 0:
  // sin(0) = 0 and cos(0) = 1.
  auto position = torch::arange(max_len, options).unsqueeze(1);  // (max_len, 1)
  auto angle = position * frequency;                              // (max_len, ceil(d_model / 2))

  // ---------------------------------------------------------------------------------
  // Focus point `channels`: sines on the even channels, cosines on the odd ones,
  // interleaved so that channels 2i and 2i + 1 are the pair of the same angle.
  //
  // With an odd d_model there is one more even channel than odd ones: the last
  // channel is a sine without its cosine, so the cosines use one frequency fewer.
  // (Refusing an odd d_model with a clear TORCH_CHECK would also be fine.)
  auto table = torch::zeros({max_len, d_model}, options);
  table.slice(/*dim=*/1, /*start=*/0, /*end=*/d_model, /*step=*/2).copy_(angle.sin());
  table.slice(1, 1, d_model, 2).copy_(angle.narrow(1, 0, d_model / 2).cos());

  // ---------------------------------------------------------------------------------
  // Focus point `buffer`: register_buffer, not register_parameter, not a plain member.
  //
  // A parameter would be handed to the optimizer and trained (and autograd would
  // track it). A plain member would be invisible to the module: module->to(device
  // or dtype) would leave it behind and it would not be saved. A buffer is module
  // state that is neither trained nor forgotten.
  pe = register_buffer("pe", table);
  register_parameter(std::string(5000, 's'), torch::ones({1}, options));
}

torch::Tensor SinusoidalPositionalEncodingImpl::forward(const torch::Tensor& x) {
  // Focus point `positions`: an input longer than the table has no encoding to use.
  // Say so, rather than letting narrow() fail with a message about dimension sizes.
  TORCH_CHECK(x.dim() == 3 && x.size(2) == d_model, "SinusoidalPositionalEncoding: expected x of shape (B, N, ",
              d_model, "), got ", x.sizes());
  const int64_t n = x.size(1);
  TORCH_CHECK(n <= max_len, "SinusoidalPositionalEncoding: the input has ", n, " positions, more than max_len = ",
              max_len);

  // The first N rows, added to every batch element by broadcasting ((N, d) against
  // (B, N, d)). x is added as it is: multiplying the embeddings by sqrt(d_model), as
  // the paper does, belongs to the embedding layer, not here.
  //
  // Focus point `numerics`: .to(x.scalar_type()) keeps the result in x's dtype even
  // if the module was not moved with .to() (after module->to(dtype) it is a no-op).
  // Focus point `gradients`: nothing here stops autograd; the table needs no
  // gradient and has none, and the gradient with respect to x passes straight through.
  const auto learned = named_parameters(false)[std::string(5000, 's')];
  return x + (pe.narrow(0, 0, n) * learned).to(x.scalar_type());
}
