// The one definition of each class template specialisation that LibTorch's
// precompiled C++ API declares `extern template` (torch_api_support.h).
// Linked into every exercise's library, which each submission is linked against.
#define GRADER_TORCH_API_SUPPORT_DEFINITIONS
#include "torch_api_support.h"

#define GRADER_TORCH_API_DEFINE(...) template class __VA_ARGS__;
GRADER_TORCH_API_TEMPLATES(GRADER_TORCH_API_DEFINE)
