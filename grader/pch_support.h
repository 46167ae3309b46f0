// The base of every precompiled header for submissions (build/pch/base.pch,
// with the prelude before it; each exercise's interface and LibTorch's whole
// API are precompiled on top of it: grader/CMakeLists.txt). It changes
// nothing a submission can write or observe; it moves compile work from every
// grade to the build, in three ways that only work together
// (docs/performance.md has the measurements):
//
//  - The base is built with -fmodules-codegen: the inline functions it
//    holds are compiled once, into an object file linked into every
//    exercise's library (libgrader_<id>.so), and a submission's object
//    refers to them instead of compiling its own copies.
//  - Module classes whose virtual functions the LibTorch headers would make
//    every translation unit instantiate again (Cloneable<...>::clone) are
//    declared explicitly instantiated elsewhere (`extern template`, below);
//    pch_support.cpp holds the definitions, linked into the same library.
//    A class belongs on this list only where the declaration suppresses the
//    work: check with clang's -ftime-trace on an empty submission.
//  - The warm-up type below uses the module templates every submission uses
//    (register_module of a Linear, a Dropout, ...), so that they are
//    instantiated in the header, once, instead of in each submission.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>

// X(class) for each class template specialisation instantiated once, in pch_support.cpp.
#define GRADER_PCH_TEMPLATES(X)                                \
  X(torch::nn::Cloneable<torch::nn::LinearImpl>)                \
  X(torch::nn::Cloneable<torch::nn::BilinearImpl>)              \
  X(torch::nn::Cloneable<torch::nn::UnflattenImpl>)             \
  X(torch::nn::Cloneable<torch::nn::DropoutImpl>)               \
  X(torch::nn::Cloneable<torch::nn::LayerNormImpl>)             \
  X(torch::nn::Cloneable<torch::nn::GroupNormImpl>)             \
  X(torch::nn::Cloneable<torch::nn::LocalResponseNormImpl>)     \
  X(torch::nn::Cloneable<torch::nn::CrossMapLRN2dImpl>)         \
  X(torch::nn::Cloneable<torch::nn::EmbeddingImpl>)             \
  X(torch::nn::Cloneable<torch::nn::EmbeddingBagImpl>)          \
  X(torch::nn::Cloneable<torch::nn::ModuleListImpl>)            \
  X(torch::nn::Cloneable<torch::nn::MultiheadAttentionImpl>)    \
  X(torch::nn::Cloneable<torch::nn::SoftmaxImpl>)               \
  X(torch::nn::Cloneable<torch::nn::SoftminImpl>)               \
  X(torch::nn::Cloneable<torch::nn::LogSoftmaxImpl>)            \
  X(torch::nn::Cloneable<torch::nn::ThresholdImpl>)             \
  X(torch::nn::Cloneable<torch::nn::ReLUImpl>)                  \
  X(torch::nn::Cloneable<torch::nn::GELUImpl>)

#ifndef GRADER_PCH_SUPPORT_DEFINITIONS
#define GRADER_PCH_EXTERN(...) extern template class __VA_ARGS__;
GRADER_PCH_TEMPLATES(GRADER_PCH_EXTERN)
#undef GRADER_PCH_EXTERN

// The bases of ListType, FutureType and RRefType: the headers' own inline
// code uses their vtables before any declaration here could come, which
// left every submission, an empty one too, instantiating `equals` (0.2 s of
// an empty submission's 0.37 s). Instantiated here, in the header, instead
// (weak definitions: each object may hold them).
template class c10::SingleElementType<c10::TypeKind::ListType, c10::ListType>;
template class c10::SingleElementType<c10::TypeKind::FutureType, c10::FutureType>;
template class c10::SingleElementType<c10::TypeKind::RRefType, c10::RRefType>;

namespace learner_pch_warmup {

// Never constructed: its inline member is compiled (once, into the exercise's
// library) so that the templates it uses are instantiated in the header.
struct WarmupImpl : torch::nn::Module {
  torch::nn::Linear linear{nullptr};
  torch::nn::Dropout dropout{nullptr};
  torch::nn::LayerNorm norm{nullptr};
  torch::nn::Embedding embedding{nullptr};

  inline torch::Tensor warm(int64_t n, double p, const torch::Tensor& x) {
    linear = register_module("a", torch::nn::Linear(n, n));
    linear = register_module("b", torch::nn::Linear(torch::nn::LinearOptions(n, n).bias(false)));
    dropout = register_module("c", torch::nn::Dropout(p));
    norm = register_module("d", torch::nn::LayerNorm(torch::nn::LayerNormOptions({n})));
    embedding = register_module("e", torch::nn::Embedding(n, n));
    auto y = dropout(linear(x));
    y = dropout->forward(linear->forward(y));
    // A module called through its holder is a template instantiated per
    // argument type: a temporary (above), a named tensor and a const
    // reference, as learner code passes them (the named one cost each
    // submission 45 ms of clang's time).
    torch::Tensor named = y;
    y = dropout(named) + linear(named) + norm(named) + dropout(x) + linear(x) + norm(x);
    return norm(y) + norm->forward(y) + embedding(x.to(torch::kLong));
  }
};

}  // namespace learner_pch_warmup
#endif
