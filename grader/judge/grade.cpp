#include "judge/grade.h"

#include <ATen/Context.h>
#include <fmt/format.h>
#include <signal.h>
#include <torch/cuda.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <future>
#include <map>
#include <random>
#include <set>

#include "judge/case_limit.h"
#include "checks/check.h"
#include "judge/compile.h"
#include "judge/error_place.h"
#include "judge/confinement.h"
#include "judge/include_policy.h"
#include "judge/compile_note.h"
#include "exercise/discovery.h"
#include "base/errors.h"
#include "base/profile.h"
#include "base/sha256.h"
#include "judge/compile_step.h"
#include "judge/process.h"
#include "judge/seed.h"
#include "report/speed.h"
#include "judge/toolchain.h"
#include "judge/verdict.h"
#include "wire/messages.h"
#include "wire/wire.h"
#include "judge/zygote.h"

namespace grader {
namespace fs = std::filesystem;
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// The message a runner reads for the planned cases `planned` (the suite's
// records; wire/messages.h). A planned case without an id or seed is the
// grader's fault.
std::string encode_planned(const std::vector<wire::Record>& planned) {
  std::vector<wire::CaseRequest> requests;
  requests.reserve(planned.size());
  try {
    for (const auto& record : planned) requests.push_back(wire::CaseRequest::of(record));
  } catch (const wire::WireError& error) {
    throw GraderFault(std::string("a planned case is incomplete: ") + error.what());
  }
  return wire::encode_requests(requests);
}

}  // namespace

Target resolve_target(const std::string& device) {
  if (device != "auto" && device != "cpu" && device != "cuda") {
    throw UsageError("--device " + device + ": the devices are cpu, cuda and auto");
  }
  Target target;
  if (device == "cpu") {
    target.no_gpu = "the grade runs on the CPU (--device cpu)";
    return target;
  }
  std::string why;
  if (!at::hasCUDA()) {
    why = "this LibTorch is built without CUDA (Debian's is CPU-only; docs/gpu.md)";
  } else if (torch::cuda::device_count() == 0) {
    why = "no CUDA device is visible";
  }
  if (why.empty()) {
    target.device = "cuda";
    target.no_gpu.clear();
  } else if (device == "cuda") {
    throw UsageError("--device cuda: " + why);
  } else {
    target.no_gpu = "no GPU: " + why;
  }
  return target;
}

namespace {
// The speed run of a passed submission (grader/report/speed.h): informational, so
// whatever stops it is said in the table's note, and the verdict stands.
SpeedReport time_forward(const ChildSpec& spec, const Exercise& exercise, const wire::Record& request) {
  SpeedReport failed;
  ChildOutcome outcome;
  try {
    outcome = run_child(spec);
  } catch (const std::exception& error) {  // the grader's trouble; the verdict stands
    failed.note = std::string("not timed: the grader could not start the speed run (") + error.what() + ")";
    return failed;
  }
  const auto stream = wire::split_runner_stream(outcome.result);
  if (!stream.ready) {
    failed.note = "not timed: the runner did not start (" + outcome.describe_end() + ")";
    return failed;
  }
  if (!outcome.exited_cleanly() || outcome.timed_out || outcome.memory_exceeded) {
    failed.note = "not timed: the speed run did not end normally (" + outcome.describe_end() + ")";
    return failed;
  }
  try {
    const auto reply = wire::decode_reply(stream.results);
    if (reply.load_error) {
      failed.note = "not timed: " + *reply.load_error;
      return failed;
    }
    if (reply.cases.size() != 1) throw wire::WireError("expected one result");
    return read_speed(exercise, request, reply.cases.front());
  } catch (const std::exception& error) {
    failed.note = std::string("not timed: the speed run's results are unreadable (") + error.what() + ")";
    return failed;
  }
}

// The GPU's device nodes, shown to a runner that grades on it.
std::vector<std::string> gpu_device_nodes() {
  std::vector<std::string> nodes;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator("/dev", error)) {
    if (entry.path().filename().string().rfind("nvidia", 0) == 0) nodes.push_back(entry.path().string());
  }
  std::sort(nodes.begin(), nodes.end());
  return nodes;
}
}  // namespace

// What prepare_grade starts; everything a grade needs before the submission.
struct PreparedGrade {
  std::string options_key;  // the options it was prepared for (prepared_for)
  Exercise exercise;
  std::unique_ptr<Suite> suite;
  Target target;
  fs::path submission;
  Toolchain toolchain;
  std::vector<std::pair<fs::path, fs::file_time_type>> inputs;  // read to prepare it, with their times
  std::unique_ptr<ScratchFolder> scratch;
  Confinement confinement;
  fs::path shared_object;  // where the compile puts the submission's shared object (compile.h)
  // Last, so stopped first (before the scratch folder goes).
  std::unique_ptr<EarlyChild> runner;
  std::unique_ptr<EarlyCompile> compile;
};

void PreparedGradeEnd::operator()(PreparedGrade* prepared) const { delete prepared; }

namespace {

std::string prepared_for(const GradeOptions& options) {
  auto number = [](const std::optional<double>& value) { return value ? fmt::format("{}", *value) : "-"; };
  return fmt::format("{}\n{}\n{}\n{}\n{}\n{}\n{}\n{}\n{}\n{}", options.project_root.string(),
                     options.build_dir.string(), options.exercise,
                     options.submission ? options.submission->string() : "-", number(options.run_seconds),
                     number(options.memory_mb), number(options.output_kb), options.sandbox.describe(),
                     options.keep_scratch, options.device);
}

fs::file_time_type modified(const fs::path& file) {
  std::error_code error;
  auto time = fs::last_write_time(file, error);
  return error ? fs::file_time_type::min() : time;
}

// Whether `prepared` still fits: the same options, nothing it read changed
// since, and its runner still waiting.
bool still_fits(const PreparedGrade& prepared, const GradeOptions& options) {
  if (prepared.options_key != prepared_for(options) || !prepared.runner->waiting()) return false;
  return std::all_of(prepared.inputs.begin(), prepared.inputs.end(),
                     [](const auto& input) { return modified(input.first) == input.second; });
}

// The runner's command: it loads the submission's shared object and runs the
// cases of `records` (none: they come later, as a deferred request).
// A runner of `object`, compiled in `scratch` (whose view is `confinement`).
ChildSpec runner_spec(const PreparedGrade& prepared, const SandboxStatus& sandbox,
                      const std::vector<wire::Record>& records, const fs::path& object, const fs::path& scratch,
                      const Confinement& confinement) {
  ChildSpec spec;
  spec.argv = {fs::absolute(prepared.toolchain.runner).string()};
  if (sandbox.seccomp) spec.argv.push_back("--seccomp");
  spec.argv.push_back(object.string());
  spec.working_dir = scratch.string();
  if (!records.empty()) spec.request = encode_planned(records);
  spec.result_channel = true;
  spec.limits = child_limits(prepared.exercise.limits.run);
  spec.limits.stop_at_output_limit = true;
  // The runner writes no file (its system-call filter refuses), and sees its
  // scratch folder read-only.
  Confinement run_view = confinement;
  if (prepared.target.on_gpu()) run_view.devices = gpu_device_nodes();
  run_view.read_only.push_back(run_view.writable);
  run_view.writable.clear();
  sandbox_child(sandbox, run_view, spec);
  return spec;
}

ChildSpec runner_spec(const PreparedGrade& prepared, const SandboxStatus& sandbox,
                      const std::vector<wire::Record>& records) {
  return runner_spec(prepared, sandbox, records, prepared.shared_object, prepared.scratch->path(),
                     prepared.confinement);
}

// The zygote runners of this grade's kind fork from (zygote.h): the runner's
// view without the scratch folder (the compiled object is passed to each
// child open), started with --zygote. No time limit of its own: each child
// has the run's.
ChildSpec zygote_spec(const PreparedGrade& prepared, const SandboxStatus& sandbox) {
  ChildSpec spec;
  spec.argv = {fs::absolute(prepared.toolchain.runner).string()};
  if (sandbox.seccomp) spec.argv.push_back("--seccomp");
  spec.argv.push_back("--zygote");
  spec.limits = child_limits(prepared.exercise.limits.run);
  spec.limits.wall_seconds = spec.limits.cpu_seconds = 365.0 * 24 * 3600;
  // The zygote's own cgroup holds LibTorch's load (about 60 MB), not a
  // learner's work (each child gets its own): never less room than that,
  // whatever limit the grade that started it asked for its children.
  constexpr size_t kZygoteMemoryBytes = size_t{256} << 20;
  if (spec.limits.memory_bytes) spec.limits.memory_bytes = std::max(spec.limits.memory_bytes, kZygoteMemoryBytes);
  Confinement view = prepared.confinement;
  view.writable.clear();
  view.work_dir = "/";
  sandbox_child(sandbox, view, spec);
  return spec;
}

// The zygote a runner of `prepared` is forked from, started on first use;
// null on a GPU (a CUDA context does not survive a fork: each runner starts
// its own) and where zygotes are off.
std::shared_ptr<Zygote> runner_zygote(const PreparedGrade& prepared, const SandboxStatus& sandbox) {
  // Siblings of one zygote share its process namespace: only the runner's
  // filter keeps them from signalling each other.
  if (prepared.target.on_gpu() || !sandbox.seccomp) return nullptr;
  auto spec = zygote_spec(prepared, sandbox);
  // What the zygote saw when it started: a rebuilt runner, driver or
  // precompiled header (a stamp of prepared.inputs) needs a new one.
  std::string key, stamps;
  for (const auto& arg : spec.argv) key += arg + '\n';
  key += spec.launcher_args + '\n' + std::to_string(spec.drop_to_nobody) + std::to_string(spec.use_cgroup) + '\n';
  for (const auto& [file, time] : prepared.inputs)
    stamps += file.string() + '@' + std::to_string(time.time_since_epoch().count()) + '\n';
  return zygote_for(key, stamps, [&spec] { return spec; });
}

}  // namespace

namespace {

// prepare_grade for `runs` grades of one submission in one runner (grade_on_seeds):
// the run's time limits are `runs` times the exercise's.
Prepared prepare(const GradeOptions& options, bool compile_ahead, size_t runs) {
  Prepared prepared(new PreparedGrade);
  auto& p = *prepared;
  p.options_key = prepared_for(options);
  auto exercise_dir = find_exercise_dir(options.project_root / "exercises", options.exercise);
  const auto toolchain_file = options.build_dir / "toolchain.txt";
  auto stamp = [&p](const fs::path& file) { p.inputs.emplace_back(file, modified(file)); };
  for (const auto& file : {exercise_dir / "exercise.yaml", exercise_dir.parent_path() / "shared.yaml", toolchain_file})
    stamp(file);
  profile::Span reading("read the exercise and make its checks");
  p.exercise = load_exercise(exercise_dir);
  auto& run_limits = p.exercise.limits.run;
  if (options.run_seconds) run_limits.seconds = run_limits.cpu_seconds = *options.run_seconds;
  if (options.memory_mb) run_limits.memory_mb = *options.memory_mb;
  if (options.output_kb) run_limits.output_kb = *options.output_kb;
  run_limits.seconds *= static_cast<double>(runs);
  run_limits.cpu_seconds *= static_cast<double>(runs);
  p.suite = make_suite(p.exercise);
  reading.end();
  profile::Span targeting("find the device");
  p.target = resolve_target(options.device);
  p.suite->set_target(p.target);
  targeting.end();
  p.submission = fs::absolute(options.submission.value_or(p.exercise.learner_file()));
  p.toolchain = load_toolchain(toolchain_file);
  // What a runner or a compiler started now has open: a rebuild meanwhile
  // (a new precompiled header, a new exercise library) makes them stale.
  for (const auto* built : {&p.toolchain.pchs, &p.toolchain.api_pchs, &p.toolchain.drivers}) {
    if (auto found = built->find(p.exercise.id); found != built->end()) stamp(found->second);
  }
  if (!p.toolchain.pch_base.empty()) stamp(p.toolchain.pch_base);
  if (!p.toolchain.torch_module.empty()) stamp(p.toolchain.torch_module);
  stamp(p.toolchain.runner);

  const auto& sandbox = options.sandbox;
  p.scratch = std::make_unique<ScratchFolder>(scratch_base(), options.keep_scratch, sandbox.drop_to_nobody);
  p.confinement = grade_confinement(p.toolchain, p.exercise, options.project_root, options.build_dir,
                                    p.submission.parent_path(), options.hide, p.scratch->path());
  p.shared_object = p.scratch->path() / "submission.so";
  // The runner starts now and loads LibTorch while the submission compiles
  // (two cores, two jobs); its request, and its clock, wait for the compile.
  profile::Span starting("start the runner's zygote (it loads LibTorch meanwhile)");
  auto runner = runner_spec(p, sandbox, {});
  runner.zygote = runner_zygote(p, sandbox);
  runner.zygote_object = p.shared_object.string();
  p.runner = std::make_unique<EarlyChild>(std::move(runner));
  starting.end();
  if (compile_ahead) {
    // For a source like the one there now: with all of LibTorch's API or not.
    bool libtorch_api = false;
    try {
      libtorch_api = includes_all_of_libtorch(read_submission(p.submission));
    } catch (const UsageError&) {  // mid-save, say: the grade will tell
    }
    p.compile = std::make_unique<EarlyCompile>(p.toolchain, p.exercise, p.scratch->path(), libtorch_api, sandbox,
                                               p.confinement);
  }
  return prepared;
}

}  // namespace

Prepared prepare_grade(const GradeOptions& options, bool compile_ahead) { return prepare(options, compile_ahead, 1); }

namespace {

// The results a runner delivered after its ready line (throws WireError),
// with the text from learner code (exception messages), shown repeated per
// check, kept short. The drivers' strings are lists the checks read (names a
// learner chose among them): cut only far above any honest module's, since a
// list cut short hides what it no longer holds (a parameter named with 5000
// characters once hid itself from the exact-names check at 4 KiB).
wire::Reply decode_results(const wire::RunnerStream& stream) {
  auto reply = wire::decode_reply(stream.results);
  if (reply.load_error) *reply.load_error = capped(*reply.load_error, kMaxLearnerText);
  for (auto& answer : reply.cases) {
    if (answer.error) *answer.error = capped(*answer.error, kMaxLearnerText);
    for (auto& [key, text] : answer.outputs.strings) text = capped(text, kMaxDriverList);
  }
  return reply;
}

// Where a run stopped by a limit was (wire.h: the runner's case markers), as
// the end of a sentence: " in case 3 of 12 (B=2 ... float32 eval, no mask),
// which had not returned"; also while the library was loading (no case begun)
// and after the results were sent.
std::string running_when_stopped(const wire::RunnerStream& stream, const std::vector<wire::Record>& requests) {
  if (!stream.last_started) {
    return " while your library was being loaded, before any case began (a global's constructor or another static "
           "initialiser runs then)";
  }
  const size_t index = *stream.last_started;
  if (!stream.results.empty())
    return " after every case had returned and the results were sent, while the program was ending";
  if (index >= requests.size()) return "";
  const auto& request = requests[index];
  return fmt::format(" in case {} of {} ({}), which had not returned", index + 1, requests.size(),
                     request.string_or("describe", request.string_or("case", "?")));
}

// ---- memory measured from outside the runner (JudgeInput::outside_memory) ----

// One runner, forked from the zygote where there is one, that runs `records`
// (the graded run's requests, whole) with `object` and is stopped once case
// `through` is done: how it ended, with its cgroup's peak until then.
ChildOutcome run_for_memory(const PreparedGrade& prepared, const SandboxStatus& sandbox,
                            const std::vector<wire::Record>& records, size_t through, const fs::path& object,
                            const fs::path& scratch, const Confinement& confinement) {
  auto spec = runner_spec(prepared, sandbox, records, object, scratch, confinement);
  spec.zygote = runner_zygote(prepared, sandbox);
  spec.zygote_object = object.string();
  spec.memory_peak_through_case = through;
  spec.run_stage = [](const std::string& result) {
    const auto progress = wire::runner_progress(result);
    RunStage stage;
    stage.ready = progress.ready;
    stage.case_markers = progress.ready ? progress.markers - 1 : 0;
    stage.last_started = progress.last_started;
    if (progress.ready && progress.rest_at < result.size() && !progress.marker_cut) {
      try {
        (void)wire::decode_reply(result.substr(progress.rest_at));
        stage.results_whole = true;
      } catch (const wire::WireError&) {
        // not whole yet
      }
    }
    return stage;
  };
  return run_child(spec);
}

// The model solution's memory peaks, by a key of what decides them
// (control_key), kept in a file of lines "<key> <bytes>".
class ControlPeaks {
 public:
  explicit ControlPeaks(fs::path file) : file_(std::move(file)) {
    std::ifstream in(file_);
    std::string key;
    for (unsigned long long bytes = 0; in >> key >> bytes;) peaks_[key] = bytes;
  }
  std::optional<uint64_t> find(const std::string& key) const {
    auto found = peaks_.find(key);
    return found == peaks_.end() ? std::nullopt : std::optional<uint64_t>(found->second);
  }
  // Kept for the next grade; a file that cannot be written costs only a rerun.
  void add(const std::string& key, uint64_t bytes) {
    peaks_[key] = bytes;
    std::error_code error;
    fs::create_directories(file_.parent_path(), error);
    std::ofstream out(file_, std::ios::app);
    out << key << ' ' << bytes << '\n';
  }

 private:
  fs::path file_;
  std::map<std::string, uint64_t> peaks_;
};

// What decides the model solution's peak on a run of cases: its compiled
// object, the runner, and the cases' sizes (their descriptions), not the
// values drawn.
std::string control_key(const fs::path& object, const std::string& runner, const std::vector<wire::Record>& run) {
  Sha256 digest;
  digest.update(read_file(object));
  std::error_code error;
  digest.update(runner + ":" + std::to_string(fs::file_size(runner, error)) + ":" +
                std::to_string(fs::last_write_time(runner, error).time_since_epoch().count()));
  for (const auto& record : run) digest.update(record.string("case") + "|" + record.string_or("describe", "") + "\n");
  return digest.hex();
}

// The graded run's requests run again through the last of the suite's memory
// cases, by the learner's code and by the exercise's model solution (compiled
// like a submission, in a scratch folder of its own that the learner's runner
// never sees; from the compile cache after the first time), each in a runner
// of its own: the kernel's count of each runner's peak, and of each memory
// case's, which the learner's code cannot reach.
OutsideMemory measure_outside_memory(const GradeOptions& options, PreparedGrade& prepared,
                                     const std::vector<wire::Record>& requests) {
  OutsideMemory memory;
  const auto cases = prepared.suite->outside_memory_cases();
  const auto& sandbox = options.sandbox;
  if (sandbox.cgroups.empty()) {
    memory.unavailable = "no cgroup for the runner here";
    return memory;
  }
  if (prepared.target.on_gpu()) {
    memory.unavailable = "on a GPU the tensors are in the device's memory, which no cgroup counts";
    return memory;
  }
  // The graded run's requests, whole, stopped once the last memory case is
  // done: to the learner's code the run is the graded one (nothing in its
  // request, nor a first call, nor a count of calls, tells them apart) until
  // the moment it is stopped.
  std::optional<size_t> through;
  for (size_t i = 0; i < requests.size(); ++i) {
    if (std::find(cases.begin(), cases.end(), requests[i].string("case")) != cases.end()) through = i;
  }
  if (!through) {
    memory.unavailable = "no memory case was planned";
    return memory;
  }
  const auto& exercise = prepared.exercise;
  const auto solutions = options.project_root / "solutions" / exercise.id;
  std::optional<fs::path> solution;
  for (const auto& name : exercise.learner_files) {
    if (fs::is_regular_file(solutions / name)) solution = solutions / name;
  }
  if (!solution || exercise.learner_files.size() != 1) {
    memory.unavailable = "no model solution installed to compare with";
    return memory;
  }
  ScratchFolder control(scratch_base(), false, sandbox.drop_to_nobody);
  const auto control_view = grade_confinement(prepared.toolchain, exercise, options.project_root, options.build_dir,
                                              solutions, options.hide, control.path());
  const auto compiled =
      compile_submission(prepared.toolchain, exercise, Submission{*solution, read_submission(*solution)},
                         control.path(), options.use_cache ? options.build_dir / "cache" / exercise.id : fs::path(),
                         sandbox, control_view);
  if (!compiled.ok) throw GraderFault("the model solution of " + exercise.id + " does not compile: " + compiled.diagnostics);
  // What each memory case held when it began and took above that (CaseMemory), by case id.
  auto taken_of = [&](const ChildOutcome& outcome) {
    std::map<std::string, std::pair<uint64_t, uint64_t>> taken;  // id -> (start, taken)
    for (const auto& window : outcome.case_memory) {
      if (window.index >= requests.size()) continue;
      const auto& id = requests[window.index].string("case");
      if (std::find(cases.begin(), cases.end(), id) == cases.end()) continue;
      taken[id] = {window.start, window.peak > window.start ? window.peak - window.start : 0};
    }
    return taken;
  };
  // The model solution's figures are kept (its object, the runner and the
  // cases' sizes decide them): "<key>" its peak, "<key>:<case>" what a case took.
  ControlPeaks known(options.build_dir / "cache" / exercise.id / "memory-control.txt");
  const std::vector<wire::Record> run(requests.begin(), requests.begin() + static_cast<std::ptrdiff_t>(*through + 1));
  const auto key = control_key(compiled.shared_object, prepared.toolchain.runner, run);
  // "<key>:cases": how many case figures were kept with the peak (none on cgroup v2).
  auto control_peak = known.find(key + ":cases") ? known.find(key) : std::nullopt;
  std::map<std::string, std::pair<uint64_t, uint64_t>> control_taken;
  for (const auto& id : cases) {
    auto start = known.find(key + ":" + id + ":start");
    auto bytes = known.find(key + ":" + id);
    if (start && bytes) control_taken[id] = {*start, *bytes};
  }
  if (!control_peak) {
    const auto theirs = run_for_memory(prepared, sandbox, requests, *through, compiled.shared_object, control.path(),
                                       control_view);
    if (!theirs.measured_through_case || !theirs.memory_peak_bytes) {
      memory.unavailable = "the model solution's run ended with " + theirs.describe_end() +
                           (theirs.memory_peak_bytes ? "" : " and no peak");
      return memory;
    }
    control_peak = *theirs.memory_peak_bytes;
    control_taken = taken_of(theirs);
    for (const auto& [id, figures] : control_taken) {
      known.add(key + ":" + id + ":start", figures.first);
      known.add(key + ":" + id, figures.second);
    }
    known.add(key, *control_peak);
    known.add(key + ":cases", control_taken.size());  // last: the figures above are whole
  }
  const auto yours = run_for_memory(prepared, sandbox, requests, *through, prepared.shared_object,
                                    prepared.scratch->path(), prepared.confinement);
  const auto& last = requests[*through].string("case");
  if (yours.markers_out_of_order) {
    memory.learner_end = "its case markers on the grader's result channel came out of order (something "
                         "else wrote into the channel)";
  } else if (!yours.measured_through_case) {
    memory.learner_end = (yours.memory_exceeded ? std::string("killed at the memory limit")
                          : yours.timed_out     ? std::string("stopped at the time limit")
                                                : "it ended early (" + yours.describe_end() + ")") +
                         " before the end of " + last;
  }
  if (!memory.learner_end.empty()) return memory;
  if (!yours.memory_peak_bytes) {
    memory.unavailable = "the runner's cgroup had no peak";
    return memory;
  }
  memory.learner_peak = *yours.memory_peak_bytes;
  memory.control_peak = *control_peak;
  memory.case_id = last;
  for (const auto& [id, figures] : taken_of(yours)) {
    auto theirs = control_taken.find(id);
    if (theirs == control_taken.end()) continue;
    memory.taken[id] = {figures.second, theirs->second.second, figures.first, theirs->second.first};
  }
  return memory;
}

// The case limits' rule for this grade: the device's, with --case-time-limit.
CaseLimitRule case_rule(const GradeOptions& options, const PreparedGrade& prepared) {
  auto rule = case_limit_rule(prepared.target.device);
  if (options.case_seconds) rule.floor_seconds = *options.case_seconds;
  return rule;
}

// The runner's step limit for cases the reference takes `reference_seconds`
// on (case_limit.h), within the run's whole limit.
std::function<std::optional<StepLimit>(const std::string&)> case_limits_of(const GradeOptions& options,
                                                                             const PreparedGrade& prepared,
                                                                             const std::vector<double>& reference_seconds) {
  const auto rule = case_rule(options, prepared);
  const double whole = prepared.exercise.limits.run.seconds;
  std::vector<double> limits;
  for (double seconds : reference_seconds) limits.push_back(case_limit_seconds(rule, seconds, whole));
  return case_step_limit(std::move(limits), std::min(whole, rule.floor_seconds), std::min(whole, rule.end_seconds));
}

// One grade under way: its report so far, and the rules that end it.
struct GradeInProgress {
  const GradeOptions& options;
  PreparedGrade& prepared;
  Suite* suite;  // the prepared grade's, or one of its own (grade_on_seeds)
  Clock::time_point start;
  GradeReport report;
  std::vector<double> reference_seconds;  // the reference's time on each request (Suite::reference_seconds)
  std::optional<OutsideMemory> outside_memory;  // where the suite asks for it

  GradeInProgress(const GradeOptions& options_, PreparedGrade& prepared_, const Submission& submission,
                  Clock::time_point start_)
      : options(options_), prepared(prepared_), suite(prepared_.suite.get()), start(start_) {
    const auto& exercise = prepared.exercise;
    report.exercise = exercise.id;
    report.title = exercise.title;
    report.submission = submission.path.string();
    report.starter = is_starter(exercise, submission.path.filename().string(), submission.text, submission.path);
    report.seed = options.seed ? *options.seed : default_seed(exercise.definition, submission.text);
    report.device = prepared.target.device;
    report.no_gpu = prepared.target.no_gpu;
    report.sandbox = options.sandbox.describe();
    report.visibility = options.visibility;
  }

  GradeReport finish(Verdict verdict, std::string summary) {
    report.verdict = verdict;
    report.summary = std::move(summary);
    report.assess_focus_points(prepared.exercise.focus_points);
    // What a full answer earns here (verdict.h), whatever stopped the grade.
    report.max_score = max_score_of(report.checks, prepared.exercise, prepared.target.on_gpu());
    // Nothing could be assessed here: no score, and no maximum to fall short of.
    if (verdict == Verdict::not_assessed) report.max_score = 0;
    // A pass says what it did not show: those points are not met.
    if (verdict == Verdict::passed) {
      std::string unassessed;
      for (const auto& focus : report.focus_points) {
        if (focus.status == FocusStatus::not_assessed) unassessed += (unassessed.empty() ? "" : ", ") + focus.point.id;
      }
      if (!unassessed.empty()) report.summary += " Not assessed here (so not met): " + unassessed + ".";
    }
    report.total_seconds = seconds_since(start);
    return report;
  }

  // The exercise's no_builtins check, failed with `message`, is the report's
  // one check (where the exercise has that check).
  void forbid(const std::string& message, std::vector<std::string> evidence) {
    if (forbids_builtins(prepared.exercise)) {
      report.checks = {ResultBuilder(prepared.exercise).fail(kNoBuiltinsCheck, message, std::move(evidence))};
    }
  }

  // The grade ended by a stage's own verdict (verdict.h).
  GradeReport decide(StageVerdict decided) {
    if (!decided.forbids.empty()) forbid(decided.forbids, std::move(decided.evidence));
    if (!decided.compiler_output.empty()) report.compiler_output = std::move(decided.compiler_output);
    return finish(decided.verdict, std::move(decided.summary));
  }

  // A fresh compile's time, kept per exercise and include; and a note when
  // including all of LibTorch's API made it slow (compile_note.h).
  void note_compile_time(const CompileResult& compiled, const Submission& submission) {
    if (compiled.cached || !compiled.ok || !compiled.not_compiled.empty()) return;
    const auto file = options.build_dir / "cache" / "compile-times.json";
    const bool whole_api = includes_all_of_libtorch(submission.text);
    const auto known = load_compile_times(file, prepared.exercise.id);
    report.compile_note =
        include_note(whole_api, compiled.seconds, known.header_only, prepared.exercise.interface_header);
    record_compile_time(file, prepared.exercise.id, whole_api, compiled.seconds);
  }

  // The verdict of a compile that stops the grade before anything runs.
  std::optional<GradeReport> after_compile(const CompileResult& compiled) {
    const auto& exercise = prepared.exercise;
    report.compile_seconds = compiled.seconds;
    report.compile_cached = compiled.cached;
    report.compile_ahead = compiled.ahead;
    if (!compiled.ok) report.compiler_output = compiled.diagnostics;
    if (auto decided = verdict_of_compile(compiled, forbids_builtins(exercise))) return decide(std::move(*decided));

    if (compiled.shared_object != prepared.shared_object)
      throw GraderFault("the compiled submission is at " + compiled.shared_object.string() + ", not " +
                        prepared.shared_object.string());
    return std::nullopt;
  }

  // The verdict of the runner's run of `requests`, ended as `outcome`.
  GradeReport conclude(const CompileResult& compiled, const std::vector<wire::Record>& requests,
                       const ChildOutcome& outcome, const std::optional<wire::Record>& speed_request) {
    const auto& exercise = prepared.exercise;
    const auto& run_limits = exercise.limits.run;
    const auto& sandbox = options.sandbox;
    keep_output(outcome);
    const auto stream = wire::split_runner_stream(outcome.result);
    if (!stream.ready) {
      // The runner never reached the learner's code: whatever stopped it (limits
      // too tight for LibTorch itself, a broken sandbox) is the grader's failure.
      throw GraderFault("the runner did not start (" + outcome.describe_end() +
                        (outcome.memory_exceeded ? ", killed at the memory limit: raise --memory-limit" : "") +
                        "): " + first_line(outcome.stderr_text));
    }
    // Trusted counters first: the cgroup's, the parent's timer and byte counts (verdict.h).
    RunEnd end;
    end.memory_exceeded = outcome.memory_exceeded;
    end.output_exceeded = outcome.output_exceeded;
    end.timed_out = outcome.timed_out;
    end.cpu_exceeded = outcome.cpu_exceeded;
    end.case_limit_seconds = outcome.step_limit_seconds;
    end.channel_replaced = outcome.exit_code == wire::kExitChannelReplaced &&
                           outcome.stderr_text.find(wire::kChannelReplaced) != std::string::npos;
    end.forbidden_call = sandbox.seccomp && outcome.term_signal == SIGSYS;
    end.process_cap_hit = outcome.process_cap_hit;
    if (end.timed_out) {
      end.where = running_when_stopped(stream, requests);
      end.case_basis = case_limit_basis(stream);
    }
    end.forbidden_symbols = compiled.forbidden_symbols;
    if (auto decided = verdict_of_run_end(end, run_limits)) return decide(std::move(*decided));
    wire::Reply reply;
    RunResults results;
    try {
      if (outcome.result_truncated) throw wire::WireError("results larger than allowed");
      reply = decode_results(stream);
    } catch (const wire::WireError& error) {
      results.decode_error = error.what();
    }
    results.exited_cleanly = outcome.exited_cleanly();
    results.end_described = outcome.describe_end();
    return judge(compiled, requests, reply, results, speed_request);
  }

  // Why a case's own limit was what it was (case_limit.h), for the case
  // `stream` was in when it was stopped.
  std::string case_limit_basis(const wire::RunnerStream& stream) const {
    const auto rule = case_rule(options, prepared);
    if (!stream.last_started) return fmt::format("; loading your library may take {:g} s", rule.floor_seconds);
    if (!stream.results.empty()) return fmt::format("; ending may take {:g} s", rule.end_seconds);
    auto basis = fmt::format("; each case may take {:g} s, or {:g} times the reference's time on it where that is longer",
                             rule.floor_seconds, rule.factor);
    const size_t index = *stream.last_started;
    if (index < reference_seconds.size() && reference_seconds[index] >= 0) {
      basis += fmt::format(" (the reference takes {:.3g} ms on this one)", 1000 * reference_seconds[index]);
    }
    return basis;
  }

  // The runner's output, shown capped.
  // What the grade keeps of how its runner ran: its output, and how it started.
  void keep_output(const ChildOutcome& outcome) {
    report.runner_forked = outcome.forked;
    report.runner_waited_seconds = outcome.stalled_seconds;
    report.program_stdout = capped(outcome.stdout_text, kMaxShownOutput, outcome.stdout_truncated);
    report.program_stderr = capped(outcome.stderr_text, kMaxShownOutput, outcome.stderr_truncated);
  }

  // The verdict of `reply`, the results the runner delivered for `requests`.
  GradeReport judge(const CompileResult& compiled, const std::vector<wire::Record>& requests,
                    const wire::Reply& reply, RunResults results,
                    const std::optional<wire::Record>& speed_request) {
    const auto& exercise = prepared.exercise;
    if (!results.decode_error && reply.load_error) {
      // Learner code cannot remove files (the runner's filter): a compiled
      // object gone missing is the grader's problem, whatever the loader says.
      std::error_code error;
      if (!fs::is_regular_file(compiled.shared_object, error)) {
        throw GraderFault("the compiled submission " + compiled.shared_object.string() +
                          " disappeared during the grade (was the scratch folder removed?)");
      }
      results.load_error = *reply.load_error;
    }
    const auto& responses = reply.cases;
    results.requests = requests.size();
    results.responses = responses.size();
    for (size_t i = 0; i < requests.size() && i < responses.size(); ++i) {
      results.in_order = results.in_order && responses[i].id == requests[i].string("case");
    }
    if (auto decided = verdict_of_results(results)) return decide(std::move(*decided));

    JudgeInput input;
    input.forbidden_symbols = compiled.forbidden_symbols;
    input.seed = report.seed;
    input.outside_memory = outside_memory;
    std::vector<std::optional<std::string>> frames;
    // A case meant to be refused raised by design: where is not asked (addr2line's start
    // costs a passing grade 0.06 s).
    for (size_t i = 0; i < requests.size(); ++i) {
      const bool refusal = requests[i].string_or(kMustRefuse, "") == "error";
      frames.push_back(refusal ? std::nullopt : responses[i].error_frames);
    }
    profile::Span placing("place runtime errors in the source (addr2line)");
    const auto places = error_places(prepared.toolchain.addr2line, compiled.shared_object,
                                     fs::path(exercise.learner_files.front()).filename().string(), frames);
    placing.end();
    for (size_t i = 0; i < requests.size(); ++i) {
      input.cases[requests[i].string("case")] =
          CaseRun{requests[i], responses[i].outputs, responses[i].error, responses[i].trace, places[i]};
    }
    profile::Span checking("the checks");
    report.checks = suite->judge(input);
    checking.end();
    mark_score_scope(report.checks, exercise, prepared.target.on_gpu());
    if (options.figures) {
      profile::Span span("draw the figures");
      try {
        report.figures = suite->figures(input);
      } catch (const Error&) {
        throw;
      } catch (const std::exception& error) {
        throw GraderFault("drawing the attention weights of " + exercise.id +
                          " failed inside the grader: " + error.what());
      }
    }
    report.assess_focus_points(exercise.focus_points);
    std::vector<std::string> case_errors;
    for (const auto& [id, run] : input.cases) case_errors.push_back(run.error());
    auto decided = verdict_of_judged(report.checks, report.focus_points, case_errors, report.no_gpu);
    // The one error every case stopped with, with where the learner's code raised it.
    if (decided.one_error) {
      for (const auto& [id, run] : input.cases) {
        if (run.thrown_at.empty()) continue;
        decided.summary += " (raised at " + run.thrown_at + ")";
        break;
      }
    }
    auto verdict = finish(decided.verdict, decided.summary);
    verdict.one_error = decided.one_error;
    if (speed_request && decided.full_pass) {
      verdict.speed = time_forward(runner_spec(prepared, options.sandbox, {*speed_request}), exercise, *speed_request);
      verdict.total_seconds = seconds_since(start);
    } else if (speed_request && (decided.verdict == Verdict::failed || decided.verdict == Verdict::memory_limit)) {
      verdict.speed.note = "not timed: the speed run follows a pass (timing wrong code says nothing)";
    }
    return verdict;
  }
};

// Whether a run of several grades' requests (grade_on_seeds) ended as a lone
// grade's run does when nothing stops it: the runner started and ended
// cleanly within its limits and delivered one result per request. Anything
// else is graded again one grade at a time, so that each gets its own verdict.
bool ran_through(const ChildOutcome& outcome, size_t requests, wire::Reply& reply) {
  const auto stream = wire::split_runner_stream(outcome.result);
  if (!stream.ready) return false;
  if (outcome.memory_exceeded || outcome.output_exceeded || outcome.timed_out || outcome.process_cap_hit ||
      outcome.result_truncated || !outcome.exited_cleanly()) {
    return false;
  }
  try {
    reply = decode_results(stream);
  } catch (const wire::WireError&) {
    return false;
  }
  return !reply.load_error && reply.cases.size() == requests;
}

// The prepared grade's submission, read now.
Submission submission_of(const PreparedGrade& prepared, const GradeOptions& options) {
  Submission submission;
  submission.path = prepared.submission;
  if (options.within && !inside_folder(submission.path, *options.within)) {
    throw InvalidSubmission(submission.path.string() + " is not a file inside " + options.within->string() +
                            " (a symbolic link on the way leads out of it): only the files handed in are graded");
  }
  submission.text = read_submission(submission.path);
  return submission;
}

// Its compile into the prepared scratch folder (taken from the cache where the
// options allow, or from the prepared compile ahead, if any).
CompileResult compile_prepared(PreparedGrade& prepared, const GradeOptions& options, const Submission& submission) {
  return compile_submission(prepared.toolchain, prepared.exercise, submission, prepared.scratch->path(),
                            options.use_cache ? options.build_dir / "cache" / prepared.exercise.id : fs::path(),
                            options.sandbox, prepared.confinement, prepared.compile.get());
}

}  // namespace

GradeReport grade(const GradeOptions& options, Prepared prepared) {
  auto start = Clock::now();
  if (!prepared || !still_fits(*prepared, options)) {
    prepared.reset();  // stopped before a new one starts
    prepared = prepare_grade(options, false);
  }
  const auto& exercise = prepared->exercise;
  const auto submission = submission_of(*prepared, options);
  GradeInProgress grading(options, *prepared, submission, start);

  // Every case runs in one child process; only its result channel counts.
  profile::Span planning("plan the cases");
  auto requests = prepared->suite->plan(grading.report.seed);
  planning.end();
  // The speed run's request is planned now, so a `speed:` that does not fit
  // the signature is the exercise's error whatever the submission does.
  std::optional<wire::Record> speed_request;
  if (prepared->target.on_gpu() && options.speed && !exercise.speed.sizes.empty())
    speed_request = plan_speed(exercise, grading.report.seed, prepared->target.device);

  // The reference's time on each case, the base of its own limit, measured
  // while the submission compiles.
  auto reference_seconds = std::async(std::launch::async, [&] {
    profile::Span span("time the reference on each case (beside the compile)");
    return prepared->suite->reference_seconds(requests);
  });
  profile::Span compiling("compile the submission");
  auto compiled = compile_prepared(*prepared, options, submission);
  prepared->compile.reset();  // unused (a cached compile): stopped
  compiling.end();
  grading.reference_seconds = reference_seconds.get();
  grading.note_compile_time(compiled, submission);
  if (auto stopped = grading.after_compile(compiled)) return *stopped;

  auto run_start = Clock::now();
  profile::Span running("run the cases in the runner");
  // For --profile: when the runner had loaded the submission (its ready line).
  auto limits = case_limits_of(options, *prepared, grading.reference_seconds);
  auto watched = [limits, begun = profile::now(), ready = false](const std::string& result) mutable {
    if (!ready && result.find(wire::kRunnerReady) != std::string::npos) {
      ready = true;
      profile::record("fork the runner and load the submission", begun, profile::now() - begun, 1);
    }
    return limits(result);
  };
  auto outcome = prepared->runner->finish(encode_planned(requests), watched);
  running.end();
  if (outcome.exited_cleanly() && !prepared->suite->outside_memory_cases().empty()) {
    profile::Span span("measure memory from outside (a second run)");
    grading.outside_memory = measure_outside_memory(options, *prepared, requests);
  }
  grading.report.run_seconds = seconds_since(run_start);
  profile::Span judging("judge the results");
  return grading.conclude(compiled, requests, outcome, speed_request);
}

std::vector<GradeReport> grade_on_seeds(const GradeOptions& base, const std::vector<uint64_t>& seeds) {
  if (seeds.empty()) throw UsageError("--seeds: give at least one seed");
  auto options = base;
  options.speed = false;  // timing is informational, and a pass's alone
  auto alone = [&options](uint64_t seed) {
    auto one = options;
    one.seed = seed;
    return grade(one);
  };
  std::vector<GradeReport> reports;
  if (seeds.size() == 1) {
    reports.push_back(alone(seeds.front()));
    return reports;
  }
  auto start = Clock::now();
  auto prepared = prepare(options, false, seeds.size());
  const auto& exercise = prepared->exercise;
  const auto submission = submission_of(*prepared, options);
  std::vector<GradeOptions> seeded(seeds.size(), options);
  std::vector<std::unique_ptr<Suite>> suites;  // one each: a suite keeps what it judged last
  std::vector<GradeInProgress> grades;
  grades.reserve(seeds.size());
  std::vector<std::vector<wire::Record>> requests;
  std::vector<wire::Record> all;
  for (size_t i = 0; i < seeds.size(); ++i) {
    seeded[i].seed = seeds[i];
    grades.emplace_back(seeded[i], *prepared, submission, start);
    suites.push_back(make_suite(exercise));
    suites.back()->set_target(prepared->target);
    grades.back().suite = suites.back().get();
    requests.push_back(suites.back()->plan(seeds[i]));
    all.insert(all.end(), requests.back().begin(), requests.back().end());
  }
  auto reference_seconds = std::async(std::launch::async, [&] {
    std::vector<double> each;
    for (size_t i = 0; i < seeds.size(); ++i) {
      auto seconds = suites[i]->reference_seconds(requests[i]);
      each.insert(each.end(), seconds.begin(), seconds.end());
    }
    return each;
  });
  auto compiled = compile_prepared(*prepared, options, submission);  // prepared without a compile ahead
  const auto all_reference_seconds = reference_seconds.get();
  std::vector<std::optional<GradeReport>> stopped;
  for (auto& grading : grades) stopped.push_back(grading.after_compile(compiled));
  if (stopped.front()) {
    for (auto& report : stopped) reports.push_back(std::move(*report));
    return reports;
  }
  auto run_start = Clock::now();
  auto outcome = prepared->runner->finish(encode_planned(all), case_limits_of(options, *prepared, all_reference_seconds));
  const double run_seconds = seconds_since(run_start);
  wire::Reply reply;
  if (!ran_through(outcome, all.size(), reply)) {
    prepared.reset();  // its runner has ended; each grade starts its own
    for (auto seed : seeds) reports.push_back(alone(seed));
    return reports;
  }
  // The memory measured from outside depends on the cases' sizes, not on
  // the inputs drawn: measured once, on the first seed's cases.
  if (!prepared->suite->outside_memory_cases().empty()) {
    const auto memory = measure_outside_memory(options, *prepared, requests.front());
    for (auto& grading : grades) grading.outside_memory = memory;
  }
  // Each grade judges its own slice, as if its runner had run it alone.
  size_t at = 0;
  for (size_t i = 0; i < seeds.size(); ++i) {
    wire::Reply slice;
    slice.cases.assign(reply.cases.begin() + static_cast<std::ptrdiff_t>(at),
                       reply.cases.begin() + static_cast<std::ptrdiff_t>(at + requests[i].size()));
    at += requests[i].size();
    grades[i].report.run_seconds = run_seconds / static_cast<double>(seeds.size());
    grades[i].keep_output(outcome);
    RunResults results;
    results.exited_cleanly = outcome.exited_cleanly();
    results.end_described = outcome.describe_end();
    reports.push_back(grades[i].judge(compiled, requests[i], slice, results, std::nullopt));
  }
  return reports;
}

}  // namespace grader
