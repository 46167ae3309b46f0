// Hostile: prints, and throws, text with C1 control characters (CSI encoded
// in UTF-8 and as a raw byte), an escape sequence and bidirectional overrides,
// which could recolour, hide or reorder the report on a terminal.
#include "sdpa.h"

#include <cstdio>
#include <stdexcept>

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value, const torch::Tensor& mask) {
  const char* text = "\xc2\x9b" "2J \x9b" "31m \x1b[8m hidden \xe2\x80\xae" "deliaf \xe2\x81\xa6" "x";
  std::printf("%s\n", text);
  std::fprintf(stderr, "%s\n", text);
  throw std::runtime_error(text);
}
