// Parsed before every submission (inside the precompiled interface, or with
// -include where there is none). These LibTorch headers hold inline functions
// that do an exercise's work with basic operators only, so neither the
// operator recording nor the imported symbols would show them. Parsed here,
// under their real names, a later #include of them is a no-op (#pragma once):
// a submission cannot re-include them with a macro renaming the function, and
// any use leaves the real name in the compiled code for the symbol check.
#pragma once

#include <torch/nn/functional/activation.h>
#include <torch/nn/modules/activation.h>

// Any later mention of their names, in a #define too, is an error the grader
// reports as the forbidden built-in it is.
#pragma GCC poison multi_head_attention_forward
