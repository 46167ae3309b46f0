// What LibTorch's C++ API module (build/pch/torch_api.pcm, for submissions
// that include <torch/torch.h>) is built from: that header, then the
// declarations below. Like pch_support.h, it changes nothing a submission can
// write or observe; it moves work from every grade to the build.
//
// Every translation unit that includes <torch/torch.h> instantiates, at its
// end, the virtual functions of module classes it never uses (the vtables the
// headers name): about 2 s of clang's time in each submission on 2 cores, for
// an empty file. An explicit instantiation declaration (`extern template`)
// tells the compiler the definitions are elsewhere (torch_api_support.cpp, in
// build/exercise-libraries/libgrader_torch_api.so with the module's compiled
// inline functions), which suppresses part of that work.
// A class belongs on this list only where the declaration measurably removes
// work: check with clang's -ftime-trace on an empty submission
// (docs/performance.md, "the <torch/torch.h> file"). The others on the trace
// (Cloneable<Conv1dImpl>::clone, ...) are instantiated whatever is declared.
// ListType's base is instantiated in pch_support.h, which comes first.
#pragma once
#include <torch/torch.h>

// X(class) for each class template specialisation instantiated once, in torch_api_support.cpp.
#define GRADER_TORCH_API_TEMPLATES(X)                                                \
  X(torch::nn::Cloneable<torch::nn::AdaptiveLogSoftmaxWithLossImpl>)                 \
  X(torch::nn::Cloneable<torch::nn::FoldImpl>)                                       \
  X(torch::nn::Cloneable<torch::nn::UnfoldImpl>)                                     \
  X(torch::nn::Cloneable<torch::nn::FractionalMaxPool2dImpl>)                        \
  X(torch::nn::Cloneable<torch::nn::FractionalMaxPool3dImpl>)                        \
  X(torch::nn::Cloneable<torch::nn::TransformerEncoderImpl>)                         \
  X(torch::nn::Cloneable<torch::nn::TransformerEncoderLayerImpl>)                    \
  X(torch::nn::Cloneable<torch::nn::TransformerDecoderImpl>)                         \
  X(torch::nn::Cloneable<torch::nn::TransformerDecoderLayerImpl>)                    \
  X(torch::nn::Cloneable<torch::nn::ZeroPad2dImpl>)                                  \
  X(torch::nn::ConvNdImpl<1, torch::nn::Conv1dImpl>)                                 \
  X(torch::nn::ConvNdImpl<2, torch::nn::Conv2dImpl>)                                 \
  X(torch::nn::ConvNdImpl<3, torch::nn::Conv3dImpl>)                                 \
  X(torch::nn::ConvNdImpl<1, torch::nn::ConvTranspose1dImpl>)                        \
  X(torch::nn::ConvNdImpl<2, torch::nn::ConvTranspose2dImpl>)                        \
  X(torch::nn::ConvNdImpl<3, torch::nn::ConvTranspose3dImpl>)                        \
  X(torch::optim::OptimizerCloneableOptions<torch::optim::AdagradOptions>)           \
  X(torch::optim::OptimizerCloneableOptions<torch::optim::AdamOptions>)              \
  X(torch::optim::OptimizerCloneableOptions<torch::optim::AdamWOptions>)             \
  X(torch::optim::OptimizerCloneableOptions<torch::optim::LBFGSOptions>)             \
  X(torch::optim::OptimizerCloneableOptions<torch::optim::RMSpropOptions>)           \
  X(torch::optim::OptimizerCloneableOptions<torch::optim::SGDOptions>)

#ifndef GRADER_TORCH_API_SUPPORT_DEFINITIONS
#define GRADER_TORCH_API_EXTERN(...) extern template class __VA_ARGS__;
GRADER_TORCH_API_TEMPLATES(GRADER_TORCH_API_EXTERN)
#undef GRADER_TORCH_API_EXTERN
#endif
