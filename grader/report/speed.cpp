#include "report/speed.h"

#include <fmt/format.h>

#include <cmath>
#include <sstream>

#include "checks/kit/kit.h"
#include "base/errors.h"

namespace grader {

namespace {

std::string describe(const std::map<std::string, int64_t>& dims) {
  std::string text;
  for (const auto& [name, value] : dims) text += (text.empty() ? "" : " ") + name + "=" + std::to_string(value);
  return text;
}

std::string key(size_t size, const std::string& what) { return "speed." + std::to_string(size) + "." + what; }

std::vector<int64_t> shape_of(const TensorSpec& spec, const kit::Dims& dims) {
  std::vector<int64_t> shape;
  for (const auto& dim : spec.shape) shape.push_back(kit::evaluate_dim(dim, dims));
  return shape;
}

double real_or(const wire::Record& record, const std::string& name, double fallback) {
  auto found = record.reals.find(name);
  return found == record.reals.end() ? fallback : found->second;
}

// The product of one size's attention: (B, H, Nq, Nk) and the arithmetic no
// correct forward can skip (QK^T and weights @ V, halved when causal; the
// four projections of self-attention).
struct Work {
  double score_elements = 0;
  double flops = 0;
};

Work work_of(const Exercise& exercise, const kit::Dims& dims) {
  const auto& speed = exercise.speed;
  const auto& inputs = exercise.signature.inputs;
  auto input_shape = [&](const std::string& name) {
    for (const auto& input : inputs) {
      if (input.name == name) return shape_of(input, dims);
    }
    return std::vector<int64_t>{};
  };
  Work work;
  const double causal = speed.causal ? 0.5 : 1.0;
  if (speed.baseline == "attention") {
    auto q = input_shape("query"), k = input_shape("key"), v = input_shape("value");
    double batch = 1;
    for (size_t i = 0; i + 2 < q.size(); ++i) batch *= static_cast<double>(q[i]);
    const double nq = static_cast<double>(q.at(q.size() - 2)), nk = static_cast<double>(k.at(k.size() - 2));
    work.score_elements = batch * nq * nk;
    work.flops = causal * 2 * batch * nq * nk * static_cast<double>(q.back() + v.back());
  } else {
    auto x = shape_of(inputs.front(), dims);
    const double B = static_cast<double>(x[0]), N = static_cast<double>(x[1]), D = static_cast<double>(x[2]);
    const double H = kit::evaluate(speed.heads, dims);
    work.score_elements = B * H * N * N;
    work.flops = causal * 2 * B * N * N * 2 * D + 2 * B * N * D * 4 * D;
  }
  return work;
}

}  // namespace

bool SpeedReport::suspicious() const {
  for (const auto& row : rows) {
    if (!row.flags.empty()) return true;
  }
  return false;
}

wire::Record plan_speed(const Exercise& exercise, uint64_t seed, const std::string& device) {
  const auto& speed = exercise.speed;
  const auto where = (exercise.dir / "exercise.yaml").string() + ": speed: ";
  wire::Record record;
  record.strings["case"] = "speed";
  record.strings["kind"] = "speed";
  record.strings["device"] = device;
  record.strings["dtype"] = "float32";
  record.ints["seed"] = static_cast<int64_t>(seed & 0x7fffffffffffffffULL);
  std::string outputs;
  for (const auto& output : exercise.signature.outputs) outputs += output.name + "\n";
  record.strings["outputs"] = outputs;
  record.strings["speed.baseline"] = speed.baseline;
  record.ints["speed.causal"] = speed.causal ? 1 : 0;
  record.ints["speed.sizes"] = static_cast<int64_t>(speed.sizes.size());
  record.ints["speed.warmup"] = 2;
  record.ints["speed.trials"] = 7;
  try {
    // The module is built once: every size must give it the same arguments.
    for (const auto& [name, expression] : exercise.signature.constructor) {
      const double first = kit::evaluate(expression, speed.sizes.front());
      for (const auto& dims : speed.sizes) {
        if (kit::evaluate(expression, dims) != first)
          throw ConfigError(where + "the sizes give the constructor's '" + name +
                            "' different values; vary only what forward's inputs carry (B, N)");
      }
      record.reals[wire::key::ctor(name)] = first;
      if (first == std::floor(first)) record.ints[wire::key::ctor(name)] = static_cast<int64_t>(first);
    }
    if (speed.baseline == "self_attention")
      record.ints["speed.heads"] = kit::evaluate_dim(speed.heads, speed.sizes.front());
    for (size_t i = 0; i < speed.sizes.size(); ++i) {
      for (const auto& input : exercise.signature.inputs) {
        if (input.kind != "randn") continue;  // no mask: the unmasked forward is timed
        std::string shape;
        for (auto dim : shape_of(input, speed.sizes[i])) shape += (shape.empty() ? "" : " ") + std::to_string(dim);
        record.strings[key(i, "shape." + input.name)] = shape;
      }
      record.strings[key(i, "describe")] = describe(speed.sizes[i]);
    }
  } catch (const ConfigError& error) {
    const std::string text = error.what();
    throw ConfigError(text.rfind(where, 0) == 0 ? text : where + text);
  }
  return record;
}

SpeedReport read_speed(const Exercise& exercise, const wire::Record& request, const wire::CaseReply& reply) {
  SpeedReport report;
  if (reply.error) {
    report.note = "not timed: the speed run stopped: " + *reply.error;
    return report;
  }
  const auto& response = reply.outputs;
  report.ran = true;
  report.device_name = response.string_or("speed.device_name", "the GPU");
  report.method = response.string_or("speed.method", "");
  report.copy_gb_s = real_or(response, "speed.copy_gb_s", 0);
  report.matmul_tflops = real_or(response, "speed.matmul_tflops", 0);
  report.note = fmt::format("float32, inputs redrawn for every trial, L2 flushed between trials, median of {} after {} "
                            "warm-up; the fused kernel returns no weights",
                            request.integer_or("speed.trials", 0), request.integer_or("speed.warmup", 0));
  const auto& speed = exercise.speed;
  for (size_t i = 0; i < speed.sizes.size(); ++i) {
    SpeedRow row;
    row.size = describe(speed.sizes[i]);
    const auto work = work_of(exercise, speed.sizes[i]);
    row.attention_matrix_mb = work.score_elements * 4 / (1024.0 * 1024.0);
    row.error = response.string_or(key(i, "error"), "");
    row.baseline_error = response.string_or(key(i, "baseline_error"), "");
    row.learner_ms = real_or(response, key(i, "learner_ms"), 0);
    row.unfused_ms = real_or(response, key(i, "unfused_ms"), 0);
    row.fused_ms = real_or(response, key(i, "fused_ms"), 0);
    row.learner_peak_mb = real_or(response, key(i, "learner_peak_mb"), -1);
    row.unfused_peak_mb = real_or(response, key(i, "unfused_peak_mb"), -1);
    row.fused_peak_mb = real_or(response, key(i, "fused_peak_mb"), -1);
    if (row.learner_ms > 0) {
      // Every input read once and every returned output written once, at the
      // copy rate measured in this run (bytes read and written per second).
      const double bytes = real_or(response, key(i, "input_bytes"), 0) + real_or(response, key(i, "output_bytes"), 0);
      if (report.copy_gb_s > 0) {
        const double floor_ms = bytes / (report.copy_gb_s * 1e9) * 1e3;
        if (row.learner_ms < 0.5 * floor_ms)
          row.flags.push_back(fmt::format("{:.3f} ms is under half the {:.3f} ms this GPU needs to read the inputs and "
                                          "write the outputs at the copy rate measured in this run",
                                          row.learner_ms, floor_ms));
      }
      if (report.matmul_tflops > 0) {
        const double tflops = work.flops / (row.learner_ms * 1e-3) / 1e12;
        if (tflops > 2 * report.matmul_tflops)
          row.flags.push_back(fmt::format("{:.0f} TFLOP/s of attention arithmetic is over twice the float32 matmul "
                                          "rate measured in this run ({:.0f} TFLOP/s)",
                                          tflops, report.matmul_tflops));
      }
    }
    if (response.integer_or(key(i, "same_output"), 0) != 0)
      row.flags.push_back("two trials on different inputs returned the same output: a result kept from an earlier "
                          "call, not computed");
    const double error = real_or(response, key(i, "max_error"), 0);
    if (error > 1e-2 || std::isnan(error))
      row.flags.push_back(fmt::format("the output differs from the fused kernel's by {:.3g} of its largest value at "
                                      "this size: the timed forward is not computing attention",
                                      error));
    report.rows.push_back(std::move(row));
  }
  return report;
}

std::string speed_text(const SpeedReport& report) {
  if (!report.ran) return report.note.empty() ? "" : "Speed: " + report.note + "\n";
  auto ms = [](double value) { return value > 0 ? fmt::format("{:.3f} ms", value) : std::string("-"); };
  auto mb = [](double value) { return value >= 0 ? fmt::format("{:.0f} MB", value) : std::string("-"); };
  auto ratio = [](double a, double b) { return a > 0 && b > 0 ? fmt::format("{:.2f}x", a / b) : std::string("-"); };
  std::string out = fmt::format("Speed on {} (informational: {}; timed with {})\n", report.device_name, report.note,
                                report.method);
  out += fmt::format("  {:<34} {:>10} {:>10} {:>10} {:>9} {:>9} {:>10} {:>10} {:>10}\n", "size", "yours", "unfused",
                     "fused", "/unfused", "/fused", "N^2 matrix", "your peak", "fused peak");
  for (const auto& row : report.rows) {
    if (!row.error.empty()) {
      out += fmt::format("  {:<34} your code failed at this size: {}\n", row.size, row.error);
      continue;
    }
    out += fmt::format("  {:<34} {:>10} {:>10} {:>10} {:>9} {:>9} {:>10} {:>10} {:>10}\n", row.size, ms(row.learner_ms),
                       ms(row.unfused_ms), ms(row.fused_ms), ratio(row.learner_ms, row.unfused_ms),
                       ratio(row.learner_ms, row.fused_ms), mb(row.attention_matrix_mb), mb(row.learner_peak_mb),
                       mb(row.fused_peak_mb));
    for (const auto& flag : row.flags) out += "    ! suspicious: " + flag + "\n";
    if (!row.baseline_error.empty()) out += "    (the grader's baselines failed at this size: " + row.baseline_error + ")\n";
  }
  out += fmt::format("  yardsticks measured in this run: device copy {:.0f} GB/s, float32 matmul {:.1f} TFLOP/s\n",
                     report.copy_gb_s, report.matmul_tflops);
  return out;
}

}  // namespace grader
