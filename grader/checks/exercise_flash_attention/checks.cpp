// Parent side of exercise_flash_attention: the reference with its replayable
// block-wise mistakes, and the memory check on the largest tensor the runner
// saw made during the call; everything else is exercise.yaml and the kit.
#include <ATen/ATen.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <sstream>

#include "checks/kit/kit.h"
#include "flash_attention.h"

namespace grader::exercise_flash_attention {
namespace {

using reference::FlashVariant;
using Bend = std::function<void(FlashVariant&, const kit::Dims&)>;

double dim_of(const kit::Dims& dims, const char* name) { return static_cast<double>(dims.at(name)); }

// Each replayable mistake of exercise.yaml, as a bend of the reference.
const std::map<std::string, Bend>& bends() {
  static const std::map<std::string, Bend> table = {
      {"stale_accumulator", [](auto& v, const auto&) { v.stale_accumulator = true; }},
      {"stale_sum", [](auto& v, const auto&) { v.stale_sum = true; }},
      {"last_block_dropped", [](auto& v, const auto&) { v.last_block_dropped = true; }},
      {"inverted_sum_correction", [](auto& v, const auto&) { v.inverted_sum_correction = true; }},
      {"inverted_accumulator_correction", [](auto& v, const auto&) { v.inverted_accumulator_correction = true; }},
      {"inverted_correction",
       [](auto& v, const auto&) { v.inverted_sum_correction = v.inverted_accumulator_correction = true; }},
      {"causal_top_left", [](auto& v, const auto&) { v.causal_top_left = true; }},
      {"causal_ignored", [](auto& v, const auto&) { v.causal_ignored = true; }},
      {"no_scaling", [](auto& v, const auto&) { v.scale = 1.0; }},
      {"float32_scale", [](auto& v, const auto& d) { v.scale = kit::float32_inverse_sqrt(dim_of(d, "d")); }},
      {"float32_sqrt", [](auto& v, const auto& d) { v.scale = kit::inverse_of_float32_sqrt(dim_of(d, "d")); }},
      {"scaled_by_d", [](auto& v, const auto& d) { v.scale = 1.0 / dim_of(d, "d"); }},
      {"scaled_by_dv", [](auto& v, const auto& d) { v.scale = 1.0 / std::sqrt(dim_of(d, "d_v")); }},
  };
  return table;
}

kit::Tensors reference_of(const kit::CaseData& data, const std::vector<std::string>& mistakes) {
  FlashVariant variant;
  for (const auto& mistake : mistakes) bends().at(mistake)(variant, data.dims);
  return {{"output", reference::flash_reference(data.inputs.at("query"), data.inputs.at("key"), data.inputs.at("value"),
                                                data.dims.at("causal") != 0, data.dims.at("block"), variant)}};
}

std::string bytes_text(double bytes) {
  if (bytes >= 1024.0 * 1024.0) return fmt::format("{:.2f} MiB", bytes / (1024.0 * 1024.0));
  return fmt::format("{:.0f} KiB", bytes / 1024.0);
}

// What the runner saw: "<bytes> <op> <size> ...".
struct Largest {
  double bytes = 0, elements = 1;
  std::string op, shape;
};
std::optional<Largest> largest_of(const CaseRun& run) {
  const auto recorded = run.trace().largest_output;
  if (!recorded) return std::nullopt;
  Largest l;
  l.bytes = static_cast<double>(recorded->bytes);
  l.op = recorded->op;
  for (const auto size : recorded->sizes) {
    l.shape += (l.shape.empty() ? "" : ", ") + std::to_string(size);
    l.elements *= static_cast<double>(size);
  }
  l.shape = "(" + l.shape + ")";
  return l;
}

// What a tensor of `elements` made during a call on (B*H = bh, Nq, Nk, block)
// says, once it is over the allowance: the (Nq, Nk) matrix or a large part of
// it; a block wider than block_size (a block size of the code's own); else
// simply more than a block needs.
std::string memory_finding(double elements, double bh, double nq, double nk, int64_t block) {
  if (elements >= nq * nk / 4) {
    return "your code makes a tensor with as many elements as the (Nq, Nk) score matrix, or a large part of it: "
           "keep one block of keys' scores at a time, and build the causal mask per block";
  }
  const double keys_per_query = elements / (bh * nq);
  if (keys_per_query > 1.5 * static_cast<double>(block) && std::floor(keys_per_query) == keys_per_query) {
    return fmt::format(
        "your code keeps {:.0f} keys' scores for every query at a time although block_size is {}: take block_size "
        "keys per step (the caller picks the block to fit its memory)",
        keys_per_query, block);
  }
  return "your code makes a tensor larger than one block of scores needs: visit the keys block_size at a time and "
         "keep only the running max, sum and output between blocks";
}

// The allowance: 1.5 times the largest of the inputs, the output and one
// block of scores for every query (B, H, Nq, block_size), in the case's
// dtype. The full score matrix is at least 4 times larger on both cases.
// Measured from outside, what a process holds varies by whole pages and by
// what its allocator keeps: correct files came within 0.5 MiB of the model
// solution in what each memory case took, files with other mistakes within
// 1.5 MiB. No allowance from outside is smaller than this.
constexpr double kOutsideFloor = 4.0 * 1024 * 1024;

CheckResult block_memory(const kit::Kit& kit, const CheckSpec& spec) {
  const auto& results = kit.results();
  std::vector<std::string> evidence;
  std::string passed;
  // Measured from outside: the run's peak above the model solution's by what
  // its largest case allows. What each case took is shown, not judged: in
  // CI's seed sweep, under load, the model solution itself came 8.75 MiB above
  // its own figure from another run on a 1024-key case.
  double outside_allowed = 0;
  std::map<std::string, double> case_allowed;
  for (const auto& id : spec.cases) {
    const auto& run = kit.input().at(id);
    if (run.threw()) return results.threw(spec.id, run);
    if (auto why = kit.not_runnable(run)) return results.skip(spec.id, "not assessed: " + *why);
    if (!run.recording_intact()) {
      return results.fail(spec.id,
                          "the operator trace was switched off during the call, so the memory used cannot be "
                          "measured: leave LibTorch's RecordFunction alone");
    }
    auto largest = largest_of(run);
    if (!largest) return results.skip(spec.id, "not assessed: no tensor was made during the call on " + run.describe());
    const auto dims = kit.data_of(run).dims;
    const double bh = static_cast<double>(dims.at("B") * dims.at("H"));
    const double nq = static_cast<double>(dims.at("Nq")), nk = static_cast<double>(dims.at("Nk"));
    const double item = run.request.string_or("dtype", "float64") == "float32" ? 4 : 8;
    const double largest_given = bh * std::max({nq * dims.at("d"), nk * dims.at("d"), nk * dims.at("d_v"),
                                                nq * dims.at("d_v"), nq * dims.at("block")});
    // Counted in elements, whatever their dtype: a bool (Nq, Nk) mask is the
    // full matrix too, and float64 accumulators for float32 inputs are no
    // larger a tensor. Elements by the shape, or by the bytes at 8 a piece
    // where that is more (the shape may be a view of one head of the storage).
    const double allowed = 1.5 * largest_given, full = bh * nq * nk * item;
    const double elements = std::max(largest->elements, largest->bytes / 8.0);
    const auto line = fmt::format(
        "{}: the largest tensor made during the call is {} ({} from {}, {:.0f} elements); the full score matrix "
        "would be {:.0f} elements (B*H*Nq*Nk, {}); allowed: {:.0f} elements (1.5 x the largest of the inputs, the "
        "output and one block of scores for every query, B*H*Nq*block_size)",
        run.describe(), bytes_text(largest->bytes), largest->shape, largest->op, elements, bh * nq * nk,
        bytes_text(full), allowed);
    evidence.push_back(line);
    if (elements > allowed) return results.fail(spec.id, memory_finding(elements, bh, nq, nk, dims.at("block")), evidence);
    // The allocator's view: every byte in use at once during the call (the
    // runner counts malloc and its family, and the code's static storage),
    // whoever allocated it, a buffer wrapped with from_blob included.
    const auto trace = run.trace();
    const double held = static_cast<double>(trace.heap_growth + trace.static_bytes);
    // At 8 bytes an element whatever the inputs' dtype: float64 accumulators
    // and blocks for float32 inputs are a precision choice, not the score matrix.
    const double given = bh * 8 *
                         (nq * dims.at("d") + nk * dims.at("d") + nk * dims.at("d_v") + 2 * nq * dims.at("d_v") +
                          2 * nq * dims.at("block"));
    const double held_allowed = std::max(given + 128.0 * 1024.0, full / 2);
    outside_allowed = std::max(outside_allowed, held_allowed);
    // Case by case from outside: a quarter of the full matrix, at least the
    // floor, not half of it: the model solution's own blocks are part of what
    // it takes, and files with other mistakes took up to 6 MiB more on the
    // 64 MiB case.
    case_allowed[id] = std::max(kOutsideFloor, full / 4);
    evidence.push_back(fmt::format(
        "{}: memory held at once during the call, counted at the allocator (LibTorch's tensors and your own "
        "buffers alike, with your code's static storage): {}; allowed: {} (a copy of the inputs, the output twice, "
        "two blocks of scores, at 8 bytes an element, and 128 KiB, or half the full score matrix if that is more)",
        run.describe(), bytes_text(held), bytes_text(held_allowed)));
    if (held > held_allowed) {
      return results.fail(spec.id,
                          "your code holds as much memory at once as the (Nq, Nk) score matrix, or a large part of "
                          "it, although no tensor LibTorch made is that large (a buffer of your own, wrapped "
                          "block by block, counts too): keep one block of keys' scores at a time",
                          evidence);
    }
    passed += (passed.empty() ? "" : "; ") + fmt::format("{} ({} held) on {}x{}", bytes_text(largest->bytes),
                                                         bytes_text(held), dims.at("Nq"), dims.at("Nk"));
  }
  // From outside the process: what the kernel counted for a runner that ran
  // the graded run again through the last memory case, against the model
  // solution's on the same cases, for the run and case by case. Stacks, heap
  // taken before the call (a static object's), any allocator: all count.
  std::string outside_note;
  if (const auto& outside = kit.input().outside_memory) {
    if (!outside->learner_end.empty()) {
      return results.fail(spec.id,
                          "run again to measure its memory from outside, your code did not get through the memory "
                          "cases as it did in the graded run (" +
                              outside->learner_end + "): the memory it holds could not be measured",
                          evidence);
    }
    if (!outside->unavailable.empty()) {
      outside_note = " (not measured from outside the process here: " + outside->unavailable + ")";
    } else {
      evidence.push_back(fmt::format(
          "measured from outside your process (the kernel's count for its cgroup: heap, stacks and memory taken "
          "before the call included), the grade's cases run again through {0} in a runner of their own: your "
          "code's runner held {1} at its peak, the model solution's {2}; allowed above the model solution's: {3} "
          "(the largest case's allowance above)",
          outside->case_id, bytes_text(static_cast<double>(outside->learner_peak)),
          bytes_text(static_cast<double>(outside->control_peak)), bytes_text(outside_allowed)));
      for (const auto& [id, taken] : outside->taken) {
        auto allowed = case_allowed.find(id);
        if (allowed == case_allowed.end()) continue;
        const auto& run = kit.input().at(id);
        evidence.push_back(fmt::format(
            "measured from outside, {}: your code's runner held {} when the case began and took {} above that, the "
            "model solution's {} and {} (shown, not judged: under load the grade sees cases begin late and its "
            "windows run into each other; a quarter of the matrix would be {})",
            run.describe(), bytes_text(static_cast<double>(taken.learner_start)),
            bytes_text(static_cast<double>(taken.learner)), bytes_text(static_cast<double>(taken.control_start)),
            bytes_text(static_cast<double>(taken.control)), bytes_text(allowed->second)));
      }
      if (auto beyond = kit::held_beyond(*outside, outside_allowed)) {
        return results.fail(
            spec.id,
            fmt::format("your code's process held {} more memory than the model solution's at its peak on the same "
                        "cases, as much as the (Nq, Nk) score matrix or a large part of it, wherever it was kept "
                        "(a buffer, a stack, memory taken before the call): keep one block of keys' scores at a time",
                        bytes_text(*beyond)),
            evidence);
      }
      const double above = static_cast<double>(outside->learner_peak) - static_cast<double>(outside->control_peak);
      outside_note = fmt::format("; measured from outside the process, {} {} the model solution's peak",
                                 bytes_text(std::abs(above)), above >= 0 ? "above" : "below");
    }
  }
  return results.pass(spec.id, "the largest tensor made during the call: " + passed +
                                   ", far below the full score matrix" + outside_note);
}

// With the causal mask, a query can meet a block whose keys are all hidden:
// the block's max is -inf, and exp(s - max) = exp(-inf - (-inf)) is NaN
// unless guarded. cases[0] is causal with such blocks; cases[1] has no mask,
// to tell this apart from NaN of another origin.
CheckResult hidden_blocks(const kit::Kit& kit, const CheckSpec& spec) {
  const auto& results = kit.results();
  const auto& run = kit.input().at(spec.cases.at(0));
  if (auto why = kit.not_runnable(run)) return results.skip(spec.id, "not assessed: " + *why);
  std::string why;
  auto output = learner_tensor(run, "output", why);
  if (!output) return results.skip(spec.id, "not assessed: " + why);
  const auto dims = kit.data_of(run).dims;
  const auto nq = dims.at("Nq"), nk = dims.at("Nk"), block = dims.at("block");
  if (output->dim() != 4 || output->size(2) != nq) {
    return results.skip(spec.id, "not assessed: the output has shape " + shape_string(output->sizes()));
  }
  auto nan_rows = at::isnan(output->to(at::kDouble)).any(-1).any(0).any(0);  // (Nq,)
  if (!nan_rows.any().item<bool>()) {
    return results.pass(spec.id, "no NaN where a whole block of keys is hidden from a query");
  }
  const auto& plain = kit.input().at(spec.cases.at(1));
  if (auto other = learner_tensor(plain, "output", why); other && at::isnan(*other).any().item<bool>()) {
    return results.skip(spec.id, "not assessed: your output has NaN without any mask too (see the numerics checks)");
  }
  std::vector<int64_t> rows, hidden;
  for (int64_t i = 0; i < nq; ++i) {
    if (nan_rows[i].item<bool>()) rows.push_back(i);
    // Query i sees keys 0 .. i + Nk - Nq; the blocks past that are wholly hidden.
    if (i + nk - nq + 1 <= ((nk - 1) / block) * block) hidden.push_back(i);
  }
  return results.fail(
      spec.id,
      "your output is NaN for queries from which a whole block of keys is hidden by the causal mask: that block's "
      "max is -inf and exp(-inf - (-inf)) is NaN. Skip such blocks, or subtract 0 where the max is -inf",
      {"input: " + run.describe(), fmt::format("queries with NaN: {}", fmt::join(rows, " ")),
       fmt::format("queries with a block of {} keys wholly hidden (query i sees keys up to i + {}): {}", block, nk - nq,
                   fmt::join(hidden, " "))});
}

// The cases of the causal_pattern measurement: one shape run without and
// with the causal mask. d_v >= Nk, so the value rows are independent and the
// output (B, H, Nq, d_v) = W V gives the attention weights W back; blocks of
// one key, so every query's own key starts a block (a block skipped "above
// the diagonal" one key too early shows).
const char* const kPatternPlain = "pattern_plain";
const char* const kPatternCausal = "pattern_causal";

void add_pattern_cases(kit::Kit& kit, std::vector<wire::Record>& cases, at::Generator& generator) {
  const kit::Dims dims = {{"B", 1}, {"H", 2}, {"Nq", 12}, {"Nk", 12}, {"d", 4}, {"d_v", 16}, {"block", 1}};
  auto plain_dims = dims, causal_dims = dims;
  plain_dims["causal"] = 0;
  causal_dims["causal"] = 1;
  auto plain = kit.make_case(CaseSpec{kPatternPlain, plain_dims, {}}, generator, 720001);
  auto causal = kit.make_case(CaseSpec{kPatternCausal, causal_dims, {}}, generator, 720002);
  // The same query, key and value in both.
  for (const char* name : {"query", "key", "value"}) {
    causal.tensors[wire::key::input(name)] = plain.tensors.at(wire::key::input(name));
  }
  plain.strings["describe"] += ", weights read from the output (d_v >= Nk)";
  causal.strings["describe"] += ", weights read from the output (d_v >= Nk)";
  cases.push_back(std::move(plain));
  cases.push_back(std::move(causal));
}

// Which keys each query weighs under the causal mask, read from the outputs
// of the pattern cases (add_pattern_cases). Judged only where the same
// inputs without the mask give the reference's output: then what differs
// with it lies in which keys it hides. Rows with NaN or infinity are left
// out (hidden_blocks_finite speaks of them).
CheckResult causal_pattern(const kit::Kit& kit, const CheckSpec& spec) {
  const auto& results = kit.results();
  const auto& plain = kit.input().at(kPatternPlain);
  const auto& masked = kit.input().at(kPatternCausal);
  for (const auto* run : {&plain, &masked}) {
    if (auto why = kit.not_runnable(*run)) return results.skip(spec.id, "not assessed: " + *why);
    if (run->threw()) return results.skip(spec.id, "not assessed: your code threw on " + run->describe());
  }
  if (kit.status(kPatternPlain) != kit::CaseStatus::matches) {
    return results.skip(spec.id, "not assessed: without the causal mask your output already differs from the "
                                 "reference (" + plain.describe() + "), so what the mask does cannot be told apart");
  }
  if (kit.status(kPatternCausal) == kit::CaseStatus::matches) {
    return results.pass(spec.id, "each query weighs exactly the keys up to its own position");
  }
  std::string why;
  auto output = learner_tensor(masked, "output", why);
  if (!output) return results.skip(spec.id, "not assessed: " + why);
  const auto data = kit.data_of(masked);
  const auto& value = data.inputs.at("value");
  if (output->sizes() != at::IntArrayRef(kit.expected(masked).at("output").sizes())) {
    return results.skip(spec.id, "not assessed: the output has shape " + shape_string(output->sizes()));
  }
  const int64_t nq = data.dims.at("Nq"), nk = data.dims.at("Nk"), shift = nk - nq;
  auto pinv = at::linalg_pinv(value.to(at::kDouble));  // (B, H, d_v, Nk)
  auto o = output->to(at::kDouble);
  auto finite_rows = at::isfinite(o).all(-1, /*keepdim=*/true);  // (B, H, Nq, 1)
  auto w = at::matmul(at::where(finite_rows, o, at::zeros_like(o)), pinv);
  // The reference's weights read the same way: the reading itself is sound.
  auto want = at::matmul(kit.expected(masked).at("output").to(at::kDouble), pinv);
  auto i = at::arange(nq, at::kLong).unsqueeze(1), j = at::arange(nk, at::kLong).unsqueeze(0);
  auto may_see = (j <= i + shift).expand_as(w);
  constexpr double kZero = 1e-9;
  if (!((want.abs() < kZero) == may_see.logical_not()).all().item<bool>()) {
    return results.skip(spec.id, "not assessed: the weights cannot be read back from the output on this draw");
  }
  auto judged = finite_rows.expand_as(w);
  auto zero = w.abs() < kZero;
  auto lost = zero & may_see & judged, leaked = zero.logical_not() & may_see.logical_not() & judged;
  if (!lost.any().item<bool>() && !leaked.any().item<bool>()) {
    return results.skip(spec.id, "not assessed: your weights under the mask differ from the reference's, but on the "
                                 "keys it should leave visible (see the numerics checks)");
  }
  auto pairs = [&](const at::Tensor& where) {
    // (query, key) pairs over the batch and heads, each pair once.
    auto any = where.any(0).any(0);
    std::vector<std::string> out;
    for (int64_t q = 0; q < nq; ++q) {
      for (int64_t k = 0; k < nk; ++k) {
        if (any[q][k].item<bool>() && out.size() < 8) out.push_back(fmt::format("query {} key {}", q, k));
      }
    }
    const auto count = any.sum().item<int64_t>();
    return fmt::format("{}{}", fmt::join(out, ", "), count > 8 ? fmt::format(" and {} more", count - 8) : "");
  };
  std::vector<std::string> evidence = {
      "input: " + masked.describe(),
      "without the mask (" + plain.describe() + ") your output matches the reference's",
      fmt::format("query i may see keys j <= i + {} (Nk - Nq = {}); the weights read from your output", shift, shift)};
  if (lost.any().item<bool>()) evidence.push_back("no weight on a key the query may see: " + pairs(lost));
  if (leaked.any().item<bool>()) evidence.push_back("weight on a key hidden from the query: " + pairs(leaked));
  evidence.push_back(kit.input().replay_hint());
  return results.fail(
      spec.id,
      lost.any().item<bool>()
          ? "with causal = true your code gives no weight to keys a query may see (without the mask it is right): "
            "query i sees every key j <= i + (Nk - Nq), its own included; look at the mask's comparison and at any "
            "test that skips a block of keys: skip it only when its first key lies after the last key the query "
            "(or every query of the tile) may see"
          : "with causal = true your code gives weight to keys hidden from the query (without the mask it is "
            "right): hide key j from query i exactly when j > i + (Nk - Nq)",
      evidence);
}

}  // namespace

std::unique_ptr<Suite> make_suite(const Exercise& exercise) {
  auto suite = std::make_unique<kit::Kit>(exercise, reference_of, keys_of(bends()));
  suite->custom("block_memory", block_memory);
  suite->memory_from_outside("block_memory");
  suite->measurement("hidden_blocks", hidden_blocks);
  suite->extra_cases(add_pattern_cases);
  suite->measurement("causal_pattern", causal_pattern);
  return suite;
}

}  // namespace grader::exercise_flash_attention
