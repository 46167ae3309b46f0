#include "op_recorder.h"

#include <ATen/core/Tensor.h>
#include <ATen/record_function.h>

#include <atomic>
#include <mutex>
#include <set>
#include <unordered_map>

namespace grader {
namespace {

std::mutex counts_mutex;
std::map<std::string, long> counts;
std::atomic<bool> recording{false};
at::CallbackHandle handle = 0;

// ---- the device watch: what learner code does inside the driver's forward scope ----
//
// Only operators learner code calls itself (depth 0 inside the scope) are
// looked at. A tensor a factory made without a device (torch::ones({N, N}))
// lands on the CPU whatever the inputs' device: it is "host-made", and so is
// everything computed from host-made tensors alone. An operator that meets a
// host-made tensor (not 0-dim: LibTorch accepts CPU scalars beside GPU
// tensors) together with any other tensor would, on a GPU, mix devices. A
// move with an explicit device (.to(x.device())) ends it. Reading a value of
// a tensor that follows the inputs (.item()) is a round trip to the host.
std::string forward_marker;
bool in_forward = false;
int depth = 0;
// Keyed by storage: LibTorch's C++ factories wrap the operator's result in a
// new tensor object over the same storage, and views share it too.
struct HostMade {
  at::Tensor keep;     // holds the storage, so its address is not reused during the case
  std::string origin;  // the factory that made it ("aten::ones")
};
std::unordered_map<const void*, HostMade> host_made;

const void* storage_of(const at::Tensor& tensor) {
  return tensor.has_storage() ? static_cast<const void*>(tensor.storage().unsafeGetStorageImpl()) : nullptr;
}
std::set<std::string> events;

// The largest storage an operator returned inside the forward scope, at any
// depth: the biggest single allocation of the forward (a view or an
// expand shares its base's storage, so it is not counted as new memory).
struct Largest {
  size_t bytes = 0;
  std::string op, shape;
} largest;

void note_size(const at::RecordFunction& fn, const std::string& op) {
  for (const auto& value : fn.outputs()) {
    if (!value.isTensor()) continue;
    const auto& tensor = value.toTensor();
    if (!tensor.defined() || !tensor.has_storage()) continue;
    const size_t bytes = tensor.storage().nbytes();
    if (bytes <= largest.bytes) continue;
    std::string shape;
    for (auto size : tensor.sizes()) shape += (shape.empty() ? "" : " ") + std::to_string(size);
    largest = {bytes, op, shape};
  }
}

// Multiply-adds of the matrix products run inside each forward scope, one
// entry per entry into the scope (a multi-step case calls learner code once per
// step). Counted at every depth on the products LibTorch's matmul, linear and
// einsum come down to, so a product is counted once whichever call made it.
std::vector<double> scope_macs;

double product_macs(const std::string& op, const at::RecordFunction& fn) {
  std::vector<at::Tensor> tensors;
  for (const auto& value : fn.inputs()) {
    if (value.isTensor() && value.toTensor().defined()) tensors.push_back(value.toTensor());
  }
  auto size = [&](size_t i, int64_t dim) { return static_cast<double>(tensors.at(i).size(dim)); };
  // (n, k) x (k, m), with or without an added term first; batched: (b, n, k) x (b, k, m).
  if ((op == "aten::mm" && tensors.size() >= 2) || (op == "aten::addmm" && tensors.size() >= 3)) {
    const size_t a = tensors.size() - 2;
    if (tensors[a].dim() != 2 || tensors[a + 1].dim() != 2) return 0;
    return size(a, 0) * size(a, 1) * size(a + 1, 1);
  }
  if ((op == "aten::bmm" && tensors.size() >= 2) || (op == "aten::baddbmm" && tensors.size() >= 3)) {
    const size_t a = tensors.size() - 2;
    if (tensors[a].dim() != 3 || tensors[a + 1].dim() != 3) return 0;
    return size(a, 0) * size(a, 1) * size(a, 2) * size(a + 1, 2);
  }
  if ((op == "aten::mv" && tensors.size() >= 2) || (op == "aten::addmv" && tensors.size() >= 3)) {
    const size_t a = tensors.size() - 2;
    return static_cast<double>(tensors[a].numel());
  }
  if ((op == "aten::dot" || op == "aten::vdot") && !tensors.empty()) return static_cast<double>(tensors[0].numel());
  return 0;
}

const std::set<std::string>& factories() {
  static const std::set<std::string> names = {
      "aten::ones",     "aten::zeros",       "aten::full",         "aten::empty",       "aten::empty_strided",
      "aten::arange",   "aten::eye",         "aten::linspace",     "aten::logspace",    "aten::rand",
      "aten::randn",    "aten::randint",     "aten::randperm",     "aten::tril_indices", "aten::triu_indices",
      "aten::bartlett_window", "aten::hann_window"};
  return names;
}

bool is_round_trip_read(const std::string& op) { return op == "aten::item" || op == "aten::_local_scalar_dense"; }
bool is_move(const std::string& op) { return op == "aten::to" || op == "aten::_to_copy" || op == "aten::cpu"; }

struct OpContext : at::ObserverContext {
  bool marker = false;
  bool watched = false;  // depth 0 inside the forward scope
  std::string op;
  std::string origin;       // of a host-made input, if any
  bool other_tensor = false;  // a tensor input that is not host-made (the input's data)
  bool device_given = false;
};

void note_inputs(const at::RecordFunction& fn, OpContext& context) {
  bool& other_tensor = context.other_tensor;
  bool to_cpu = false, from_accelerator = false;  // a move to the CPU counts only from elsewhere
  for (const auto& value : fn.inputs()) {
    if (value.isDevice()) {
      context.device_given = true;
      to_cpu |= value.toDevice().is_cpu();
    }
    auto note = [&](const at::Tensor& tensor) {
      if (!tensor.defined()) return;
      from_accelerator |= !tensor.is_cpu();
      auto found = storage_of(tensor) ? host_made.find(storage_of(tensor)) : host_made.end();
      if (found != host_made.end()) {
        if (context.origin.empty()) context.origin = found->second.origin;
      } else if (tensor.dim() > 0) {
        other_tensor = true;
      }
    };
    if (value.isTensor()) note(value.toTensor());
    if (value.isTensorList()) {
      for (const auto& tensor : value.toTensorList()) note(tensor);
    }
  }
  if (!context.origin.empty() && other_tensor && !is_move(context.op)) {
    events.insert("mixed " + context.op + " " + context.origin);
  }
  if (is_round_trip_read(context.op) && context.origin.empty()) {
    events.insert("item " + context.op);
  }
  if (is_move(context.op) && to_cpu && from_accelerator) events.insert("to_host " + context.op);
}

void note_outputs(const at::RecordFunction& fn, const OpContext& context) {
  if (is_move(context.op) && context.device_given) {
    // .to(x.device()): on the CPU the result is the same tensor; trusted to follow x.
    for (const auto& value : fn.outputs()) {
      if (value.isTensor() && value.toTensor().defined() && storage_of(value.toTensor()))
        host_made.erase(storage_of(value.toTensor()));
    }
    return;
  }
  std::string origin;
  if (factories().count(context.op) && !context.device_given) {
    origin = context.op;
  } else if (!context.origin.empty() && !context.other_tensor && !(is_move(context.op) && context.device_given)) {
    origin = context.origin;  // computed from host-made tensors alone: still on the host
  }
  if (origin.empty()) return;
  for (const auto& value : fn.outputs()) {
    if (!value.isTensor()) continue;
    const auto& tensor = value.toTensor();
    if (tensor.defined() && tensor.dim() > 0 && storage_of(tensor)) host_made[storage_of(tensor)] = {tensor, origin};
  }
}

std::unique_ptr<at::ObserverContext> on_enter(const at::RecordFunction& fn) {
  if (!recording.load()) return nullptr;
  std::lock_guard<std::mutex> lock(counts_mutex);
  auto context = std::make_unique<OpContext>();
  if (fn.scope() == at::RecordScope::USER_SCOPE) {
    if (forward_marker.empty() || fn.name() != forward_marker) return nullptr;
    context->marker = true;
    in_forward = true;
    depth = 0;
    scope_macs.push_back(0);
    return context;
  }
  ++counts[fn.name()];
  if (in_forward) {
    context->op = fn.name();
    if (!scope_macs.empty()) scope_macs.back() += product_macs(context->op, fn);
    if (depth == 0) {
      context->watched = true;
      note_inputs(fn, *context);
    }
    ++depth;
  }
  return context;
}

void on_exit(const at::RecordFunction& fn, at::ObserverContext* base) {
  auto* context = static_cast<OpContext*>(base);
  if (!context) return;
  std::lock_guard<std::mutex> lock(counts_mutex);
  if (context->marker) {
    in_forward = false;
    return;
  }
  if (context->op.empty()) return;
  --depth;
  note_size(fn, context->op);
  if (context->watched) note_outputs(fn, *context);
}

}  // namespace

OpRecorder::OpRecorder() {
  handle = at::addGlobalCallback(at::RecordFunctionCallback(on_enter, on_exit)
                                     .needsInputs(true)
                                     .needsOutputs(true)
                                     .scopes({at::RecordScope::FUNCTION, at::RecordScope::USER_SCOPE}));
}

OpRecorder::~OpRecorder() {
  if (handle != 0 && at::hasGlobalCallbacks()) at::removeCallback(handle);
}

void OpRecorder::start(const std::string& marker) {
  std::lock_guard<std::mutex> lock(counts_mutex);
  counts.clear();
  forward_marker = marker;
  in_forward = false;
  depth = 0;
  host_made.clear();
  events.clear();
  largest = {};
  scope_macs.clear();
  recording = true;
}

std::map<std::string, long> OpRecorder::stop() {
  recording = false;
  std::lock_guard<std::mutex> lock(counts_mutex);
  host_made.clear();
  return counts;
}

std::vector<std::string> OpRecorder::device_events() const {
  std::lock_guard<std::mutex> lock(counts_mutex);
  return {events.begin(), events.end()};
}

std::string OpRecorder::largest_output() const {
  std::lock_guard<std::mutex> lock(counts_mutex);
  if (largest.bytes == 0) return "";
  return std::to_string(largest.bytes) + " " + largest.op + " " + largest.shape;
}

std::string OpRecorder::scope_work() const {
  std::lock_guard<std::mutex> lock(counts_mutex);
  std::string text;
  for (double macs : scope_macs) text += (text.empty() ? "" : " ") + std::to_string(static_cast<int64_t>(macs));
  return text;
}

bool OpRecorder::intact() const { return at::isRecordFunctionEnabled() && at::hasGlobalCallbacks(); }

namespace {
const std::string kOpPrefix = "op:";
}

void put_op_counts(wire::Record& response, const std::map<std::string, long>& op_counts) {
  for (const auto& [name, count] : op_counts) response.ints[kOpPrefix + name.substr(0, kMaxOpName)] += count;
}

std::map<std::string, long> op_counts(const wire::Record& response) {
  std::map<std::string, long> counts;
  for (auto it = response.ints.lower_bound(kOpPrefix); it != response.ints.end(); ++it) {
    if (it->first.compare(0, kOpPrefix.size(), kOpPrefix) != 0) break;
    counts[it->first.substr(kOpPrefix.size())] = static_cast<long>(it->second);
  }
  return counts;
}

}  // namespace grader
