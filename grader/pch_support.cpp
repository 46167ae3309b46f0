// The one definition of each class template specialisation that the
// precompiled interfaces declare `extern template` (pch_support.h). Linked
// into every exercise's library, which each submission is linked against.
#define GRADER_PCH_SUPPORT_DEFINITIONS
#include "pch_support.h"

#define GRADER_PCH_DEFINE(...) template class __VA_ARGS__;
GRADER_PCH_TEMPLATES(GRADER_PCH_DEFINE)
