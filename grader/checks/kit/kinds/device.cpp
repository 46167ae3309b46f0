#include "checks/kit/kit.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/version.h>

#include <algorithm>
#include <chrono>
#include <cctype>
#include <cmath>
#include <functional>
#include <limits>
#include <set>
#include <sstream>

#include "checks/kit/helpers.h"
#include "base/errors.h"
#include "report/report.h"

namespace grader::kit {

std::optional<std::string> device_mismatch(const std::string& error) {
  if (error.find("same device") == std::string::npos &&
      error.find("Expected object of device type") == std::string::npos)
    return std::nullopt;
  std::string op = "an operator";
  auto method = error.find("in method ");
  if (method != std::string::npos) {
    auto name = error.substr(method + 10);
    name = name.substr(0, name.find_first_of(") \n"));
    for (const char* prefix : {"wrapper_CUDA_", "wrapper_CPU_", "wrapper_", "_"}) {
      while (name.rfind(prefix, 0) == 0) name = name.substr(std::string(prefix).size());
    }
    if (!name.empty()) op = name;
  }
  // LibTorch 2.x: "expected self and mask to be on the same device, but got mask on cpu and self on cuda:0".
  auto got = error.find("but got ");
  if (op == "an operator" && got != std::string::npos) {
    op += " (" + error.substr(got + 8, error.find_first_of(")\n", got) - got - 8) + ")";
  }
  auto argument = error.find("argument for argument ");
  if (argument != std::string::npos) {
    auto name = error.substr(argument + 22);
    name = name.substr(0, name.find(' '));
    if (!name.empty()) op += " (its argument " + name + ")";
  }
  return op;
}

// ---- device placement ----

std::vector<Kit::DeviceProblem> Kit::gpu_device_problems() const {
  std::vector<DeviceProblem> problems;
  std::set<std::string> seen;
  const auto wanted = target().device;
  const auto& outputs = exercise_.signature.outputs;
  for (const auto& [id, run] : input_->cases) {
    if (auto op = device_mismatch(run.error())) {
      if (seen.insert(*op).second) {
        problems.push_back(
            {"tensors on different devices met in " + *op + ": " + first_line(run.error()), run.describe()});
      }
      continue;
    }
    if (run.threw()) continue;
    // The forward's own outputs (what a driver reports besides, like a fit's losses, is the grader's).
    for (const auto& output : outputs) {
      const auto device = run.response.string_or(output.name + ".device", wanted);
      if (device.rfind(wanted, 0) == 0 || !seen.insert("output " + output.name).second) continue;
      problems.push_back(
          {"your " + output.name + " came back on " + device + " while the inputs were on " + wanted, run.describe()});
    }
  }
  return problems;
}

CheckResult Kit::device_placement(const CheckSpec& spec) const {
  // What the runner's device watch saw (wire/trace.h), first case of each.
  std::map<wire::DeviceEvent, std::string> first_seen;
  // `cases`: only those (an exercise whose interface moves data to the host
  // on purpose in other cases); otherwise every case.
  for (const auto& [id, run] : input_->cases) {
    if (!spec.cases.empty() && std::find(spec.cases.begin(), spec.cases.end(), id) == spec.cases.end()) continue;
    for (const auto& event : run.trace().device_events) first_seen.emplace(event, run.describe());
  }
  auto short_op = [](std::string op) { return op.rfind("aten::", 0) == 0 ? op.substr(6) : op; };
  std::vector<std::string> evidence;
  std::string message;
  for (const auto& [event, where] : first_seen) {
    const auto& op = event.op;
    const auto& origin = event.factory;
    using Kind = wire::DeviceEvent::Kind;
    if (event.kind == Kind::mixed) {
      evidence.push_back(short_op(op) + " received a tensor that " + short_op(origin) +
                         " made on the CPU (no device given) together with the input's data (" + where + ")");
      if (message.empty()) {
        message = "a tensor made inside forward with torch::" + short_op(origin) +
                  " and no device stays on the CPU: on a GPU, " + short_op(op) +
                  " would fail with a device mismatch; create it with the input's options (x.options(), "
                  "x.device()) or register it as a buffer";
      }
    } else if (event.kind == Kind::item) {
      evidence.push_back(short_op(op) + " read a value of the input's data back to the host (" + where + ")");
      if (message.empty()) {
        message =
            "forward reads a tensor's value back to the host (.item()): on a GPU every call waits for the "
            "device; keep the computation in tensors";
      }
    } else if (event.kind == Kind::to_host) {
      evidence.push_back(short_op(op) + " moved the input's data to the CPU (" + where + ")");
      if (message.empty()) {
        message =
            "forward moves data to the CPU (.cpu(), .to(torch::kCPU)): a silent round trip; keep every "
            "tensor on the input's device";
      }
    }
  }
  if (target().on_gpu()) {
    for (const auto& problem : gpu_device_problems()) {
      if (message.empty()) message = "on the GPU, " + problem.what;
      evidence.push_back("on " + problem.where + ", " + problem.what);
    }
  }
  if (!message.empty()) return results_.fail(spec.id, message, evidence);
  // Credit only from a case the statement says must succeed: code that ran
  // only where it should have refused shows nothing of the exercise's.
  const bool any_ran = std::any_of(input_->cases.begin(), input_->cases.end(), [](const auto& entry) {
    return !entry.second.threw() && !entry.second.must_refuse();
  });
  if (!any_ran) {
    return results_.skip(spec.id, "not assessed: every case the statement says must succeed stopped with an error, "
                                  "so nothing was traced");
  }
  return results_.pass(spec.id, target().on_gpu()
                                    ? "every case ran on the GPU; nothing was made on a fixed device or read back "
                                      "to the host inside forward"
                                    : "inside forward nothing made on a fixed device meets the input's data and "
                                      "nothing is read back to the host (operator trace on the CPU)");
}

CheckResult Kit::gpu_execution(const CheckSpec& spec) const {
  if (!target().on_gpu()) {
    // (Why there is no GPU: the report's last line says it once.)
    auto skipped = results_.skip(spec.id, "needs a GPU: not run on this machine, left out of the score");
    skipped.needs_gpu = true;
    skipped.gpu_confirmation = true;
    return skipped;
  }
  auto problems = gpu_device_problems();
  if (!problems.empty()) {
    std::vector<std::string> evidence;
    for (const auto& problem : problems) evidence.push_back("on " + problem.where + ", " + problem.what);
    return results_.fail(spec.id, "on the GPU, " + problems.front().what, evidence);
  }
  size_t ran = 0;
  for (const auto& [id, run] : input_->cases) ran += run.threw() ? 0 : 1;
  return results_.pass(spec.id, fmt::format("{} cases ran on the GPU, their outputs on the inputs' device", ran));
}

}  // namespace grader::kit
