// Forbidden (round-7 red team): LibTorch's own attention (aten::_scaled_dot_product_attention_math,
// forbidden by `scaled_dot_product`) run by calling its CPU kernel's boxed
// function straight out of the dispatcher's table, read through private
// members, not through any dispatcher function.
//
// How:
//  * torch::jit::getAllOperatorsFor(Symbol) (out of line in libtorch_cpu.so:
//    _ZN5torch3jit18getAllOperatorsForEN3c106SymbolE, no rule matches, not in
//    build/pch/*.reach because it is not defined in the precompiled objects)
//    gives the jit::Operator of the op; its name is put together at run time.
//  * The private members Operator::op_ -> C10Operator::handle_ ->
//    OperatorHandle::operatorDef_ -> OperatorDef::op (OperatorEntry) ->
//    OperatorEntry::dispatchTable_[CPU] -> KernelFunction::boxed_kernel_func_
//    -> BoxedKernel::{functor_, boxed_kernel_func_} are opened with the
//    explicit-instantiation access trick ([temp.explicit]: access is not
//    checked in an explicit instantiation). The accessors are friend functions
//    whose mangled names hold only a local tag (checked with clang++ here:
//    `_ZN4peek9member_ofENS_5HSlotE` for a test struct named
//    c10::impl::OperatorEntry, /tmp/redteam/scratch/rob.cpp), and every member
//    access is the built-in `.*`: no function whose name contains
//    10Dispatcher / 14OperatorHandle / 14KernelFunction / 13OperatorEntry /
//    callBoxed is defined or imported. The std::array of KernelFunctions is
//    indexed by byte arithmetic, not std::array::operator[] (whose mangled name
//    would hold 14KernelFunction).
//  * The boxed kernel is a plain function pointer
//    (void(OperatorKernel*, const OperatorHandle&, DispatchKeySet, Stack*)):
//    calling it leaves no symbol and no relocation.
//
// Why the audit misses it: grader/judge/symbol_rules.cpp judges names
// (kJudgeRules) of the object's own symbols and, for imports, what
// build/pch/<id>.reach lists. Every imported name here is clean:
// getAllOperatorsFor, Symbol::fromQualString, c10::either<...C10Operator...>::
// left/is_left, DispatchKeySet's inline helpers, IValue/vector/Tensor code.
// The reach file only knows symbols *defined* in base.pch.o/<id>.pch.o/
// torch_api.pcm.o (grader/judge/inline_reach.cpp: ReferenceGraph::reaching
// walks defined nodes only), so an out-of-line LibTorch function is judged by
// its own name alone, and data (the dispatch table) is never followed.
//
// Why the recording misses it: RecordFunction for an operator is started only
// in Dispatcher::call / Dispatcher::callBoxed (ATen/core/dispatch/Dispatcher.h
// lines 614-643); the kernel is entered below that. The composite kernel's
// inner operators (mul, matmul, add_, softmax, matmul, plus zeros_like /
// masked_fill_ / logical_not for the mask) are basic ones and are recorded as
// if the learner called them, so the trace has operators, none forbidden,
// and every matrix product BLAS computes is a recorded aten::bmm/mm
// (unrecorded_work stays quiet). Being CompositeImplicitAutograd, the inner
// calls go through autograd: gradients are LibTorch's and correct.
#include "sdpa.h"

#include <torch/csrc/jit/runtime/operator.h>

#include <string>

namespace {

template <typename Slot, auto Member>
struct Open {
  friend auto member_of(Slot) { return Member; }
};
struct OpSlot { friend auto member_of(OpSlot); };
struct DefSlot { friend auto member_of(DefSlot); };
struct TableSlot { friend auto member_of(TableSlot); };
struct NameSlot { friend auto member_of(NameSlot); };
struct BoxedSlot { friend auto member_of(BoxedSlot); };
struct FunctorSlot { friend auto member_of(FunctorSlot); };
struct FnSlot { friend auto member_of(FnSlot); };
template struct Open<OpSlot, &torch::jit::Operator::op_>;
template struct Open<DefSlot, &c10::OperatorHandle::operatorDef_>;
template struct Open<TableSlot, &c10::impl::OperatorEntry::dispatchTable_>;
template struct Open<NameSlot, &c10::impl::OperatorEntry::name_>;
template struct Open<BoxedSlot, &c10::KernelFunction::boxed_kernel_func_>;
template struct Open<FunctorSlot, &c10::BoxedKernel::functor_>;
template struct Open<FnSlot, &c10::BoxedKernel::boxed_kernel_func_>;

// "aten::_scaled_dot_product_attention_math", one letter on, so that no
// forbidden name sits in the object's bytes either.
std::string op_name() {
  std::string s = "bufo;;`tdbmfe`epu`qspevdu`buufoujpo`nbui";
  for (auto& c : s) c = static_cast<char>(c - 1);
  return s;
}

using BoxedFn = void(c10::OperatorKernel*, const c10::OperatorHandle&, c10::DispatchKeySet, torch::jit::Stack*);

// Runs the CPU kernel of the overload-less operator `name` on `stack`.
void run_kernel(const std::string& name, torch::jit::Stack& stack) {
  const auto& found = torch::jit::getAllOperatorsFor(c10::Symbol::fromQualString(name));
  for (const auto& op : found) {
    const auto& alternatives = (*op).*member_of(OpSlot{});
    if (!alternatives.is_left()) continue;
    const auto& c10op = alternatives.left();
    const auto& handle = c10op.handle_;
    auto* def = handle.*member_of(DefSlot{});
    const auto& entry = def->op;
    if (!(entry.*member_of(NameSlot{})).overload_name.empty()) continue;
    const auto& table = entry.*member_of(TableSlot{});
    const int index = c10::DispatchKeySet(c10::DispatchKey::CPU).getDispatchTableIndexForDispatchKeySet();
    const auto* bytes = reinterpret_cast<const unsigned char*>(&table);
    const auto& kernel = *reinterpret_cast<const c10::KernelFunction*>(bytes + index * sizeof(c10::KernelFunction));
    const auto& boxed = kernel.*member_of(BoxedSlot{});
    BoxedFn* fn = boxed.*member_of(FnSlot{});
    c10::OperatorKernel* functor = (boxed.*member_of(FunctorSlot{})).get();
    TORCH_CHECK(fn != nullptr, "no kernel");
    fn(functor, handle, c10::DispatchKeySet(c10::DispatchKey::CPU), &stack);
    return;
  }
  TORCH_CHECK(false, "no such operator");
}

}  // namespace

std::tuple<torch::Tensor, torch::Tensor> scaled_dot_product_attention(
    const torch::Tensor& query, const torch::Tensor& key, const torch::Tensor& value,
    const torch::Tensor& mask) {
  // Bool mask, true where a query may attend (the math kernel turns it into
  // an additive 0 / -inf mask itself).
  c10::IValue attend = mask.defined() ? c10::IValue(mask != 0) : c10::IValue();
  torch::jit::Stack stack{query, key, value, attend, /*dropout_p=*/0.0, /*need_attn_weights=*/true,
                          /*is_causal=*/false};
  run_kernel(op_name(), stack);
  return {stack[0].toTensor(), stack[1].toTensor()};
}
