// Forbidden (round-7 red team): the same fused kernel as
// tests/submissions/exercise_mhsa/hostile/fused_attention_through_jit_operator.cpp
// (aten::_native_multi_head_attention, forbidden by `multi_head_attention`),
// now called through the *ordinary*, recorded JIT path
// (torch::jit::Operator::getOperation(), whose Operation is
// `[op](Stack& s) { op.callBoxed(s); }` compiled inside libtorch_cpu,
// register_c10_ops.cpp), after switching the recording off for that one
// operator: the dispatcher records an operator only when
// `entry.isObserved()` (Dispatcher.h:626 for callBoxed, the same test in
// Dispatcher::call), and that is a plain `const bool is_observed_` field of
// the operator's OperatorEntry (OperatorEntry.h: `const bool is_observed_;`),
// read on every call. This file clears it for the fused operator, calls it,
// and sets it back.
//
// Why the audit misses it:
//  * No getOperationForDispatchKey / callBoxedForDispatchKey (the rules and the
//    reach file catch those now). Operator::getOperation() is an inline
//    function that reaches no rule (it is not among build/pch/exercise_mhsa.reach's
//    106 entries, which do list getOperationForDispatchKey), and
//    torch::jit::Operation::operator() is std::function's call. The call into
//    the dispatcher happens inside libtorch_cpu.so, in code neither the
//    learner object nor the precompiled objects hold.
//  * The private members are opened by the explicit-instantiation access trick
//    (see the comment in exercise_sdpa__math_kernel_from_dispatch_table.cpp):
//    only friend functions `member_of(<tag>)` are emitted, and every access is
//    the built-in `.*`. Imported names: getAllOperatorsFor, fromQualString,
//    c10::either<Operator::C10Operator, ...>::left/is_left, Operation,
//    std::function, IValue and Tensor code. None contains 10Dispatcher,
//    14OperatorHandle, callBoxed, 14KernelFunction, 13OperatorEntry,
//    RecordFunction, record_function, ... nor a forbidden operator's name (the
//    name is put together at run time).
//
// Why the recording misses it: with is_observed_ false, Dispatcher::callBoxed
// skips the RecordFunction for the fused operator; its CPU kernel's inner
// operators (_transform_bias_rescale_qkv, bmm, _masked_softmax, addmm/mm,
// ...) are separate operators, still observed, recorded at depth 0 as if the
// learner had called them: none is forbidden, every product BLAS computes is
// recorded (unrecorded_work quiet), and the count does not grow with the heads.
// recording_intact (isRecordFunctionEnabled && hasGlobalCallbacks) is true
// throughout. The old hostile file got "Implemented from basic operations:
// met" through exactly this runtime behaviour.
//
// The same switch, applied to every operator of torch::jit::getAllOperators(),
// is the recording switched off as a whole with no name for the audit to
// find: see exercise_layer_norm__autograd_walk_with_ops_unobserved.cpp.
#include "mhsa.h"

#include <torch/csrc/jit/runtime/operator.h>

#include <string>

namespace {

template <typename Slot, auto Member>
struct Open {
  friend auto member_of(Slot) { return Member; }
};
struct OpSlot { friend auto member_of(OpSlot); };
struct DefSlot { friend auto member_of(DefSlot); };
struct NameSlot { friend auto member_of(NameSlot); };
struct SeenSlot { friend auto member_of(SeenSlot); };
template struct Open<OpSlot, &torch::jit::Operator::op_>;
template struct Open<DefSlot, &c10::OperatorHandle::operatorDef_>;
template struct Open<NameSlot, &c10::impl::OperatorEntry::name_>;
template struct Open<SeenSlot, &c10::impl::OperatorEntry::is_observed_>;

std::string decoded(std::string s) {
  for (auto& c : s) c = static_cast<char>(c - 1);
  return s;
}

// Clears one operator's "observed" flag for its lifetime.
struct Unseen {
  bool* flag;
  bool was;
  explicit Unseen(bool* f) : flag(f), was(*f) { *flag = false; }
  ~Unseen() { *flag = was; }
};

}  // namespace

MultiHeadSelfAttentionImpl::MultiHeadSelfAttentionImpl(int64_t dim, int64_t num_heads, double dropout)
    : dim(dim), num_heads(num_heads), head_dim(dim / num_heads) {
  TORCH_CHECK(dim % num_heads == 0, "dim must be divisible by num_heads");
  q_proj = register_module("q_proj", torch::nn::Linear(dim, dim));
  k_proj = register_module("k_proj", torch::nn::Linear(dim, dim));
  v_proj = register_module("v_proj", torch::nn::Linear(dim, dim));
  out_proj = register_module("out_proj", torch::nn::Linear(dim, dim));
  this->dropout = register_module("dropout", torch::nn::Dropout(dropout));
}

torch::Tensor MultiHeadSelfAttentionImpl::forward(const torch::Tensor& x) {
  torch::NoGradGuard inference_only;  // the fused kernel has no backward
  // "aten::_native_multi_head_attention", one letter on.
  const auto name = decoded("bufo;;`obujwf`nvmuj`ifbe`buufoujpo");
  const auto& found = torch::jit::getAllOperatorsFor(c10::Symbol::fromQualString(name));
  for (const auto& op : found) {
    const auto& alternatives = (*op).*member_of(OpSlot{});
    if (!alternatives.is_left()) continue;
    auto* def = alternatives.left().handle_.*member_of(DefSlot{});
    auto& entry = def->op;
    if (!(entry.*member_of(NameSlot{})).overload_name.empty()) continue;
    auto qkv_weight = torch::cat({q_proj->weight, k_proj->weight, v_proj->weight});
    auto qkv_bias = torch::cat({q_proj->bias, k_proj->bias, v_proj->bias});
    torch::jit::Stack stack{x, x, x, dim, num_heads, qkv_weight, qkv_bias, out_proj->weight, out_proj->bias,
                            c10::IValue(), false, true, c10::IValue()};
    torch::jit::Operation run = op->getOperation();
    {
      Unseen quiet(const_cast<bool*>(&(entry.*member_of(SeenSlot{}))));
      run(stack);
    }
    return stack[0].toTensor();
  }
  TORCH_CHECK(false, "no such operator");
}
