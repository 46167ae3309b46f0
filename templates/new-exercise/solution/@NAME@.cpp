// Model solution of @ID@, commented for study. TODO the explanation.
#include "@NAME@.h"

torch::Tensor @NAME@(const torch::Tensor& x) {
  // TODO the solution; the skeleton's task is to return x unchanged.
  return x.clone();
}
