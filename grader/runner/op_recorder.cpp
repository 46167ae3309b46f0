#include "op_recorder.h"

#include <ATen/core/Tensor.h>
#include <ATen/core/grad_mode.h>
#include <ATen/record_function.h>

#include <sys/resource.h>
#include <sys/time.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <mutex>
#include <set>
#include <sstream>
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
constexpr char kEngineNode[] = "autograd::engine::evaluate_function: ";
bool in_forward = false;
// Per thread: an operator one thread is inside (a helper parked in one) says
// nothing of the depth of another thread's calls.
thread_local int depth = 0;
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
std::set<wire::DeviceEvent> events;
std::set<double> fills;  // finite masked_fill values (note_inputs)
// Operators learner code called itself in the scope with grad mode on and an
// input that requires grad (an autograd graph built), and the first one's name.
long graph_ops = 0;
std::string graph_op;

// The largest storage an operator returned inside the forward scope, at any
// depth: the biggest single allocation of the forward (a view or an
// expand shares its base's storage, so it is not counted as new memory).
struct Largest {
  size_t bytes = 0;
  std::string op;
  std::vector<int64_t> sizes;
} largest;

void note_size(const at::RecordFunction& fn, const std::string& op) {
  for (const auto& value : fn.outputs()) {
    if (!value.isTensor()) continue;
    const auto& tensor = value.toTensor();
    if (!tensor.defined() || !tensor.has_storage()) continue;
    const size_t bytes = tensor.storage().nbytes();
    if (bytes <= largest.bytes) continue;
    largest = {bytes, op, tensor.sizes().vec()};
  }
}

// The work of each entry into the forward scope (a multi-step case calls
// learner code once per step), one entry per call:
// - macs: multiply-adds of the matrix products and convolutions, counted at
//   every depth on the operators LibTorch's matmul, linear, einsum and
//   tensordot come down to (a product is counted once whichever call made it);
// - elements: the elements of every tensor the learner's own operator calls
//   (depth 0) return, views excepted: work done element by element (a product
//   written as a broadcast multiply and a sum) shows here.
struct ScopeWork {
  double macs = 0, elements = 0;
  uint64_t computed_at_entry = 0, computed = 0;
  uint64_t calls = 0;  // operators learner code called itself (depth 0), any name
  // The process's CPU time during the call, by the kernel's clock (every
  // thread: work a helper thread does for the call counts).
  uint64_t cpu_at_entry = 0, cpu_ns = 0;
};

// getrusage, not CLOCK_PROCESS_CPUTIME_ID: with RLIMIT_CPU set (the runner's
// limits) the kernel serves the process clock from a counter updated at each
// scheduler tick (4 ms here), while getrusage sums every thread's exact
// runtime (to the microsecond).
uint64_t process_cpu_ns() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const auto micros = [](const timeval& t) {
    return static_cast<uint64_t>(t.tv_sec) * 1000000ull + static_cast<uint64_t>(t.tv_usec);
  };
  return (micros(usage.ru_utime) + micros(usage.ru_stime)) * 1000ull;
}
std::vector<ScopeWork> call_work;
void (*scope_entered)() = nullptr;
void (*scope_left)() = nullptr;
uint64_t (*computed_now)() = nullptr;

const std::set<std::string>& view_ops() {
  static const std::set<std::string> names = {
      "aten::view",        "aten::view_as",    "aten::reshape",    "aten::_reshape_alias",
      "aten::transpose",   "aten::permute",    "aten::narrow",     "aten::slice",
      "aten::select",      "aten::unsqueeze",  "aten::squeeze",    "aten::expand",
      "aten::expand_as",   "aten::as_strided", "aten::alias",      "aten::t",
      "aten::contiguous",  "aten::detach",     "aten::unflatten",  "aten::flatten",
      "aten::chunk",       "aten::split",      "aten::unbind",     "aten::diagonal",
      "aten::movedim",     "aten::swapaxes",   "aten::lift_fresh", "aten::split_with_sizes",
      "aten::unsafe_split"};
  return names;
}

// The defined tensors among an operator's inputs or outputs.
template <typename Values>
std::vector<at::Tensor> tensors_in(const Values& values) {
  std::vector<at::Tensor> tensors;
  for (const auto& value : values) {
    if (value.isTensor() && value.toTensor().defined()) tensors.push_back(value.toTensor());
  }
  return tensors;
}

// Multiply-adds of one matrix-product call, from the shapes of its factors.
double product_macs(const std::string& op, const at::RecordFunction& fn) {
  static const std::set<std::string> products = {
      "aten::mm",      "aten::addmm",   "aten::addmm_",   "aten::_addmm_activation",
      "aten::bmm",     "aten::baddbmm", "aten::baddbmm_", "aten::addbmm",
      "aten::addbmm_", "aten::mv",      "aten::addmv",    "aten::addmv_",
      "aten::dot",     "aten::vdot"};
  if (!products.count(op)) return 0;  // most calls: no tensors copied out
  const auto tensors = tensors_in(fn.inputs());
  auto dims_are = [&](size_t a, int64_t d) {
    return tensors.size() > a + 1 && tensors[a].dim() == d && tensors[a + 1].dim() == d;
  };
  auto size = [&](size_t i, int64_t dim) { return static_cast<double>(tensors.at(i).size(dim)); };
  // (n, k) x (k, m); with an added term first, the factors are the second and third.
  if (op == "aten::mm" && dims_are(0, 2)) return size(0, 0) * size(0, 1) * size(1, 1);
  if ((op == "aten::addmm" || op == "aten::addmm_" || op == "aten::_addmm_activation") && dims_are(1, 2))
    return size(1, 0) * size(1, 1) * size(2, 1);
  // (b, n, k) x (b, k, m)
  if (op == "aten::bmm" && dims_are(0, 3)) return size(0, 0) * size(0, 1) * size(0, 2) * size(1, 2);
  if ((op == "aten::baddbmm" || op == "aten::baddbmm_" || op == "aten::addbmm" || op == "aten::addbmm_") &&
      dims_are(1, 3))
    return size(1, 0) * size(1, 1) * size(1, 2) * size(2, 2);
  if (op == "aten::mv" && !tensors.empty()) return static_cast<double>(tensors[0].numel());
  if ((op == "aten::addmv" || op == "aten::addmv_") && tensors.size() >= 2)
    return static_cast<double>(tensors[1].numel());
  if ((op == "aten::dot" || op == "aten::vdot") && !tensors.empty()) return static_cast<double>(tensors[0].numel());
  return 0;
}

// Multiply-adds of a convolution, known once its output is: each output
// element is a dot product over one filter (weight numel / out_channels).
double convolution_macs(const std::string& op, const at::RecordFunction& fn) {
  // Every convolution comes down to aten::_convolution (conv1d, conv2d,
  // convolution, or a direct call): counted there, once.
  if (op != "aten::_convolution") return 0;
  const auto out = tensors_in(fn.outputs()), in = tensors_in(fn.inputs());
  if (out.empty() || in.size() < 2 || in[1].dim() < 1 || in[1].size(0) == 0) return 0;
  return static_cast<double>(out[0].numel()) * static_cast<double>(in[1].numel() / in[1].size(0));
}

// The elements a learner's operator call returned, views and results that
// are one of its inputs (an in-place call on a view of nothing new) excepted.
double new_elements(const std::string& op, const at::RecordFunction& fn) {
  if (view_ops().count(op)) return 0;
  std::set<const void*> inputs;
  for (const auto& tensor : tensors_in(fn.inputs())) {
    if (tensor.has_storage()) inputs.insert(tensor.storage().unsafeGetStorageImpl());
  }
  const bool in_place = !op.empty() && op.back() == '_';
  double elements = 0;
  for (const auto& tensor : tensors_in(fn.outputs())) {
    const bool fresh = !tensor.has_storage() || !inputs.count(tensor.storage().unsafeGetStorageImpl());
    if (fresh || in_place) elements += static_cast<double>(tensor.numel());
  }
  return elements;
}

const std::set<std::string>& factories() {
  static const std::set<std::string> names = {
      "aten::ones",          "aten::zeros",        "aten::full",         "aten::empty",
      "aten::empty_strided", "aten::arange",       "aten::eye",          "aten::linspace",
      "aten::logspace",      "aten::rand",         "aten::randn",        "aten::randint",
      "aten::randperm",      "aten::tril_indices", "aten::triu_indices", "aten::bartlett_window",
      "aten::hann_window"};
  return names;
}

// Operators that put a value given as a scalar into a tensor: masks filled, biases made.
bool is_fill(const std::string& op) {
  return op == "aten::masked_fill" || op == "aten::masked_fill_" || op == "aten::where" || op == "aten::full" ||
         op == "aten::full_like" || op == "aten::fill_";
}

bool is_round_trip_read(const std::string& op) { return op == "aten::item" || op == "aten::_local_scalar_dense"; }
bool is_move(const std::string& op) { return op == "aten::to" || op == "aten::_to_copy" || op == "aten::cpu"; }

struct OpContext : at::ObserverContext {
  bool marker = false;
  bool watched = false;  // depth 0 inside the forward scope
  std::string op;
  std::string origin;         // of a host-made input, if any
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
  if (is_fill(context.op) && fills.size() < wire::kMaxFillValues) {
    // full and full_like take their dtype (an integer) after the value: only
    // argument 1 is the fill there; elsewhere every scalar argument is one.
    const auto inputs = fn.inputs();
    const bool value_first = context.op == "aten::full" || context.op == "aten::full_like";
    for (size_t i = value_first ? 1 : 0; i < inputs.size() && (!value_first || i < 2); ++i) {
      const auto& value = inputs[i];
      if (value.isDouble() && std::isfinite(value.toDouble())) fills.insert(value.toDouble());
      if (value.isInt()) fills.insert(static_cast<double>(value.toInt()));
    }
  }
  if (!context.origin.empty() && other_tensor && !is_move(context.op)) {
    events.insert({wire::DeviceEvent::Kind::mixed, context.op, context.origin});
  }
  if (is_round_trip_read(context.op) && context.origin.empty()) {
    events.insert({wire::DeviceEvent::Kind::item, context.op, ""});
  }
  if (is_move(context.op) && to_cpu && from_accelerator) events.insert({wire::DeviceEvent::Kind::to_host, context.op, ""});
}

// Whether an operator's inputs include a tensor that requires grad (with grad
// mode on, its result joins an autograd graph).
bool builds_graph(const at::RecordFunction& fn) {
  for (const auto& value : fn.inputs()) {
    if (value.isTensor() && value.toTensor().defined() && value.toTensor().requires_grad()) return true;
    if (value.isTensorList()) {
      for (const auto& tensor : value.toTensorList()) {
        if (static_cast<const at::Tensor&>(tensor).defined() && static_cast<const at::Tensor&>(tensor).requires_grad()) return true;
      }
    }
  }
  return false;
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
    call_work.emplace_back();
    if (computed_now) call_work.back().computed_at_entry = computed_now();
    if (scope_entered) scope_entered();
    call_work.back().cpu_at_entry = process_cpu_ns();
    return context;
  }
  // The autograd engine's record of a node it runs (a backward the learner
  // wrote, traced under the scope: the driver's learners_backward) is no
  // operator: what runs inside it is at the caller's depth.
  if (in_forward && std::strncmp(fn.name(), kEngineNode, sizeof(kEngineNode) - 1) == 0) return nullptr;
  ++counts[fn.name()];
  if (in_forward) {
    context->op = fn.name();
    if (!call_work.empty()) call_work.back().macs += product_macs(context->op, fn);
    if (depth == 0) {
      context->watched = true;
      if (!call_work.empty()) ++call_work.back().calls;
      note_inputs(fn, *context);
      if (at::GradMode::is_enabled() && builds_graph(fn)) {
        if (graph_ops++ == 0) graph_op = context->op;
      }
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
    if (!call_work.empty()) call_work.back().cpu_ns = process_cpu_ns() - call_work.back().cpu_at_entry;
    in_forward = false;
    if (scope_left) scope_left();
    if (computed_now && !call_work.empty()) {
      call_work.back().computed = computed_now() - call_work.back().computed_at_entry;
    }
    return;
  }
  if (context->op.empty()) return;
  --depth;
  note_size(fn, context->op);
  if (!call_work.empty()) {
    call_work.back().macs += convolution_macs(context->op, fn);
    if (context->watched) call_work.back().elements += new_elements(context->op, fn);
  }
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
  fills.clear();
  largest = {};
  graph_ops = 0;
  graph_op.clear();
  call_work.clear();
  recording = true;
}

std::map<std::string, long> OpRecorder::stop() {
  recording = false;
  std::lock_guard<std::mutex> lock(counts_mutex);
  host_made.clear();
  return counts;
}

std::vector<wire::DeviceEvent> OpRecorder::device_events() const {
  std::lock_guard<std::mutex> lock(counts_mutex);
  return {events.begin(), events.end()};
}

std::optional<wire::LargestOutput> OpRecorder::largest_output() const {
  std::lock_guard<std::mutex> lock(counts_mutex);
  if (largest.bytes == 0) return std::nullopt;
  return wire::LargestOutput{static_cast<int64_t>(largest.bytes), largest.op, largest.sizes};
}

std::vector<wire::ScopeWork> OpRecorder::scope_work() const {
  std::lock_guard<std::mutex> lock(counts_mutex);
  std::vector<wire::ScopeWork> work;
  for (const auto& call : call_work) {
    work.push_back({static_cast<double>(static_cast<int64_t>(call.macs)),
                    static_cast<double>(static_cast<int64_t>(call.elements)), static_cast<double>(call.computed),
                    static_cast<double>(call.calls), static_cast<double>(call.cpu_ns)});
  }
  return work;
}

std::pair<long, std::string> OpRecorder::graph_built() const {
  std::lock_guard<std::mutex> lock(counts_mutex);
  return {graph_ops, graph_op};
}

std::vector<double> OpRecorder::fill_values() const {
  std::lock_guard<std::mutex> lock(counts_mutex);
  return {fills.begin(), fills.end()};
}

void OpRecorder::on_scope(void (*entered)(), void (*left)()) {
  std::lock_guard<std::mutex> lock(counts_mutex);
  scope_entered = entered;
  scope_left = left;
}

void OpRecorder::count_computed(uint64_t (*now)()) {
  std::lock_guard<std::mutex> lock(counts_mutex);
  computed_now = now;
}

bool OpRecorder::intact() const { return at::isRecordFunctionEnabled() && at::hasGlobalCallbacks(); }

}  // namespace grader
