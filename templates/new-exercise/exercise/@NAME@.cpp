// @ID@: TODO one line on the task.
// Read README.md in this folder, then run:  ./grade @ID@
#include "@NAME@.h"

torch::Tensor @NAME@(const torch::Tensor& x) {
  // 1. TODO the first step.
  TORCH_CHECK(false, "not implemented yet: @NAME@ (edit exercises/@ID@/@NAME@.cpp)");
}
