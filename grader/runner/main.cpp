// The runner: the only grader code in the child process. It loads the learner's
// shared object, executes each requested case through the exercise's driver,
// and sends back what the learner's code produced over fd 4. It decides
// nothing: every comparison and verdict happens in the parent.
//
//   grader-runner SUBMISSION.so     (request on fd 3, results on fd 4)
#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <c10/util/Exception.h>
#include <c10/util/Logging.h>
#include <dlfcn.h>
#include <execinfo.h>
#include <fcntl.h>
#include <link.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "op_recorder.h"
#include "runner/blas_count.h"
#include "runner/driver_api.h"
#include "runner/heap.h"
#include "runner/library_files.h"
#include "runner/seccomp.h"
#include "runner/zygote.h"
#include "wire/messages.h"
#include "wire/wire.h"

namespace {

// LibTorch's errors carry, instead of its own stack trace (1.13 symbolises
// one for every error, a search through its ~290 libraries, tens of
// milliseconds each), the frames of the call stack that lie in the learner's
// object: at most four, innermost first, each "learner frame +OFFSET" with
// OFFSET its place in the object's file less one (the call, not the return
// address), in hex. The grader maps them to file and line with the object's
// line tables (judge/error_place.h). Unwinding takes microseconds.
uintptr_t g_learner_base = 0;  // where the submission was loaded; 0: not yet
constexpr const char* kFramePrefix = "learner frame +";

std::string learner_stack() {
  if (g_learner_base == 0) return std::string();
  void* frames[64];
  const int depth = backtrace(frames, 64);
  std::string out;
  int found = 0;
  for (int i = 0; i < depth && found < 4; ++i) {
    Dl_info info{};
    if (!dladdr(frames[i], &info) || reinterpret_cast<uintptr_t>(info.dli_fbase) != g_learner_base) continue;
    const auto address = reinterpret_cast<uintptr_t>(frames[i]);
    if (address <= g_learner_base) continue;
    char text[64];
    std::snprintf(text, sizeof text, "%s%lx\n", kFramePrefix, static_cast<unsigned long>(address - g_learner_base - 1));
    out += text;
    ++found;
  }
  return out;
}

// The offsets of the learner frames an error's text carries (learner_stack),
// one per line, for the wire (CaseReply::error_frames).
std::string learner_frames(const std::string& what) {
  std::string frames;
  for (size_t at = what.find(kFramePrefix); at != std::string::npos; at = what.find(kFramePrefix, at + 1)) {
    const auto begin = at + std::strlen(kFramePrefix);
    const auto end = what.find_first_not_of("0123456789abcdef", begin);
    if (end == begin) continue;
    frames += what.substr(begin, (end == std::string::npos ? what.size() : end) - begin) + "\n";
  }
  return frames;
}

// Not dumpable: its /proc entries (descriptors, memory) belong to root, so
// another grade's runner, the same user nobody, cannot open its pipes by
// /proc/PID/fd where no namespace separates them. From before any shared
// library's initialiser runs (LibTorch's take most of a second): the
// executable's pre-initialisers come first. The
// execute-only mode (grader/CMakeLists.txt) closes the rest of the window,
// from exec to here, where fs.suid_dumpable is 0 or 2.
void undumpable() { prctl(PR_SET_DUMPABLE, 0, 0, 0, 0); }
__attribute__((section(".preinit_array"), used)) void (*const kUndumpableFirst)() = undumpable;

using grader::wire::Record;
using RunCase = void (*)(const Record&, Record&);

std::string read_all(int fd) {
  std::string data;
  char buffer[65536];
  ssize_t got;
  while ((got = read(fd, buffer, sizeof(buffer))) > 0) data.append(buffer, static_cast<size_t>(got));
  return data;
}

bool write_all(int fd, const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    ssize_t wrote = write(fd, data.data() + sent, data.size() - sent);
    if (wrote <= 0) return false;
    sent += static_cast<size_t>(wrote);
  }
  return true;
}

// Which pipe a descriptor is (device and inode): learner code that puts a
// pipe of its own in the result channel's place changes it.
std::pair<dev_t, ino_t> identity(int fd) {
  struct stat info {};
  if (fstat(fd, &info) != 0 || !S_ISFIFO(info.st_mode)) return {0, 0};
  return {info.st_dev, info.st_ino};
}

std::pair<dev_t, ino_t> channel;  // the result channel's identity, taken before any learner code ran

// Learner code that replaced the result channel is told apart from a crash:
// checked before anything more is written on it.
void require_own_channel(int fd) {
  if (channel.second == 0 || identity(fd) != channel) {
    std::fprintf(stderr, "%s\n", grader::wire::kChannelReplaced.c_str());
    std::fflush(stderr);
    std::_Exit(grader::wire::kExitChannelReplaced);
  }
}

void send(int fd, const grader::wire::Reply& reply) {
  require_own_channel(fd);
  if (!write_all(fd, grader::wire::encode_reply(reply))) {
    std::fprintf(stderr, "grader-runner: cannot write results\n");
    std::_Exit(70);
  }
  close(fd);
}

// The size in memory of the writable segments of the loaded object `file`.
int64_t writable_bytes_of(const char* file) {
  struct Search {
    std::string name;
    int64_t bytes = 0;
  } search{file, 0};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto& wanted = *static_cast<Search*>(data);
        if (!info->dlpi_name || wanted.name != info->dlpi_name) return 0;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const auto& header = info->dlpi_phdr[i];
          if (header.p_type == PT_LOAD && (header.p_flags & PF_W)) wanted.bytes += static_cast<int64_t>(header.p_memsz);
        }
        return 1;
      },
      &search);
  return search.bytes;
}

}  // namespace

namespace {

// Whether the results are sent; the learner's loaded object.
std::atomic<bool> results_sent{false};
void* learner_object = nullptr;

// What the loader's own end (_dl_fini) would run of the learner's object:
// its DT_FINI_ARRAY, last entry first, then DT_FINI (`__attribute__((destructor))`).
void run_learner_finalizers() {
  link_map* map = nullptr;
  if (!learner_object || dlinfo(learner_object, RTLD_DI_LINKMAP, &map) != 0 || !map || !map->l_ld) return;
  ElfW(Addr) array = 0, fini = 0;
  size_t size = 0;
  for (const ElfW(Dyn)* entry = map->l_ld; entry->d_tag != DT_NULL; ++entry) {
    if (entry->d_tag == DT_FINI_ARRAY) array = entry->d_un.d_ptr;
    if (entry->d_tag == DT_FINI_ARRAYSZ) size = entry->d_un.d_val;
    if (entry->d_tag == DT_FINI) fini = entry->d_un.d_ptr;
  }
  using Finalizer = void (*)();
  if (array) {
    auto* first = reinterpret_cast<Finalizer*>(map->l_addr + array);
    for (size_t i = size / sizeof(Finalizer); i-- > 0;) first[i]();
  }
  if (fini) reinterpret_cast<Finalizer>(map->l_addr + fini)();
}

// An exit() a finalizer calls ends here, with its status, before the loader's
// own end would run the finalizers a second time.
void end_now(int status, void*) {
  std::fflush(nullptr);
  std::_Exit(status);
}

// Registered just before learner code loads. exit() runs what was registered
// after it first: the learner's static destructors and atexit handlers, the
// driver's; then this, which runs the learner object's finalizers and ends
// the process with exit's status, before LibTorch's own teardown (every
// operator unregistered: 0.16 s of an mhsa grade's 0.21 s run). A crash, a
// hang or another exit status from the learner's exit code is still its own,
// as before. An exit before the results are sent (learner code calling exit
// during a case) runs everything, as before.
void end_before_libtorch_teardown(int status, void*) {
  if (!results_sent.load()) return;
  on_exit(end_now, nullptr);  // runs first in an exit() called from here on
  run_learner_finalizers();
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  std::_Exit(status);
}

}  // namespace

// Runs the request on fd 3 against the shared object `submission_file`, the
// results on fd 4 (a fresh runner's main, or a zygote's child: zygote.h).
// `shown_name` stands for `submission_file` in what the grader is sent;
// `object_fd`, where it is open, is closed once it is loaded.
int grader::run_submission(const char* submission_file, const std::string& shown_name, bool filter, int object_fd) {
  // Private channel: move it off the well-known fd 4, to a descriptor learner
  // code cannot guess, before any learner code runs.
  std::random_device entropy;
  int result_fd = fcntl(4, F_DUPFD_CLOEXEC, 64 + static_cast<int>(entropy() % 900));
  close(4);
  if (result_fd < 0) return 71;
  channel = identity(result_fd);
  if (channel.second == 0) return 71;
  std::vector<grader::wire::CaseRequest> requests;
  try {
    requests = grader::wire::decode_requests(read_all(3));
  } catch (const grader::wire::WireError& error) {
    std::fprintf(stderr, "grader-runner: bad request: %s\n", error.what());
    return 71;
  }
  close(3);

  // LibTorch's errors carry the learner's frames only (learner_stack), not
  // LibTorch's symbolised stack trace. backtrace() loads its unwinder on its
  // first call: made here, before the system-call filter.
  {
    void* warm[2];
    (void)backtrace(warm, 2);
  }
  c10::SetStackTraceFetcher(std::function<std::string()>(learner_stack));

  // One thread: reproducible results and a predictable process count.
  at::set_num_threads(1);
  at::set_num_interop_threads(1);
  grader::OpRecorder recorder;
  recorder.on_scope(grader::heap::scope_entered, grader::heap::scope_left);
  recorder.count_computed(grader::blas::computed_macs);
  // A grade on the GPU opens the GPU's device files (for writing, which the
  // filter refuses) and loads its libraries now, before the filter and before
  // any learner code: a GPU the runner cannot use is the grader's problem.
  bool gpu = false;
  for (const auto& request : requests) gpu |= request.device != "cpu";
  if (gpu) {
    try {
      auto options = at::TensorOptions().device(at::kCUDA);
      for (auto dtype : {at::kFloat, at::kDouble}) {
        auto a = at::ones({8, 8}, options.dtype(dtype));
        auto warm = at::softmax(at::matmul(a, a), -1).sum();
        (void)warm.item<double>();  // waits for the device
      }
    } catch (const std::exception& error) {
      std::fprintf(stderr, "grader-runner: cannot use the GPU: %s\n", error.what());
      return 73;
    }
  }
  // No reading LibTorch's library files from here on (their symbol tables
  // would give the addresses of kernels no symbol of the submission names);
  // the submission's own file stays readable.
  {
    const int object = object_fd >= 0 ? object_fd : open(submission_file, O_PATH | O_CLOEXEC);
    (void)grader::refuse_reading_libtorch(object);  // where the kernel has no Landlock, nothing changes
    if (object != object_fd && object >= 0) close(object);
  }
  if (filter) {
    auto problem = grader::install_seccomp_filter();
    if (!problem.empty()) {
      std::fprintf(stderr, "grader-runner: cannot install the system-call filter: %s\n", problem.c_str());
      return 72;
    }
  }
  // Tells the parent that the runner itself started: whatever happens after
  // this is the learner code's doing.
  if (!write_all(result_fd, grader::wire::kRunnerReady)) return 71;

  on_exit(end_before_libtorch_teardown, nullptr);
  // Static initialisers of learner code run here, inside the child.
  void* submission = dlopen(submission_file, RTLD_NOW | RTLD_LOCAL);
  learner_object = submission;
  if (!submission) {
    grader::wire::Reply failure;
    std::string error = dlerror();
    for (size_t at = error.find(submission_file); at != std::string::npos && shown_name != submission_file;
         at = error.find(submission_file, at + shown_name.size())) {
      error.replace(at, std::strlen(submission_file), shown_name);
    }
    failure.load_error = error;
    send(result_fd, failure);
    return 0;
  }
  if (object_fd >= 0) close(object_fd);
  auto run_case = reinterpret_cast<RunCase>(dlsym(submission, "grader_run_case"));
  // Where the submission's own object lies (grader_run_case is the driver's,
  // in another library): its frames are the ones an error names.
  if (struct link_map* map = nullptr; dlinfo(submission, RTLD_DI_LINKMAP, &map) == 0 && map) {
    g_learner_base = static_cast<uintptr_t>(map->l_addr);
  }
  if (!run_case) {
    grader::wire::Reply failure;
    failure.load_error = "the submission does not export grader_run_case";
    send(result_fd, failure);
    return 0;
  }

  // Memory the learner's object holds from its start: its writable segments
  // (static arrays in .data and .bss are no heap allocation).
  const int64_t static_bytes = writable_bytes_of(submission_file);

  // The name of the scope the driver opens around learner code, unknown to it
  // in advance (grader::driver::ForwardScope).
  const std::string marker = "grader::forward#" + std::to_string(entropy()) + std::to_string(entropy());
  grader::wire::Reply reply;
  for (size_t index = 0; index < requests.size(); ++index) {
    const auto& request = requests[index];
    // Which case is under way, should a limit stop it (wire.h: kCaseStarted).
    require_own_channel(result_fd);
    if (!write_all(result_fd, grader::wire::kCaseStarted + std::to_string(index) + "\n")) return 71;
    auto driver_request = request.driver_record();
    driver_request.strings["forward_scope"] = marker;
    Record response;
    grader::wire::CaseReply answer;
    answer.id = request.id;
    at::manual_seed(static_cast<uint64_t>(request.seed));
    // The speed run is timed, not traced: a callback on every operator would
    // slow the learner's code and the baselines alike, and the fused baseline
    // is no operator of the learner's.
    const bool traced = request.kind != "speed";
    if (traced) {
      recorder.start(marker);
      (void)grader::heap::take_growth();
    }
    try {
      run_case(driver_request, response);
    } catch (const c10::Error& error) {
      answer.error = error.what_without_backtrace();
      // Where in the learner's code: the frames of LibTorch's backtrace that
      // lie in the submission, as offsets the grader maps to file:line.
      if (auto frames = learner_frames(error.what()); !frames.empty()) answer.error_frames = frames;
    } catch (const std::exception& error) {
      answer.error = error.what();
    } catch (...) {
      answer.error = "an exception that is not a std::exception was thrown";
    }
    // Only the runner speaks for the envelope and the trace.
    response.strings.erase("case");
    response.strings.erase("error");
    response.strings.erase("error_frames");
    (void)grader::wire::take_trace(response);
    if (traced) {
      grader::wire::Trace trace;
      trace.op_counts = recorder.stop();
      trace.device_events = recorder.device_events();
      trace.largest_output = recorder.largest_output();
      trace.scope_work = recorder.scope_work();
      trace.fill_values = recorder.fill_values();
      trace.heap_growth = grader::heap::take_growth();
      trace.static_bytes = static_bytes;
      trace.recording_intact = recorder.intact();
      std::tie(trace.graph_ops, trace.graph_op) = recorder.graph_built();
      answer.trace = trace;
    }
    answer.outputs = std::move(response);
    reply.cases.push_back(std::move(answer));
  }
  std::fflush(stdout);
  send(result_fd, reply);
  results_sent = true;
  return 0;
}

namespace {

int usage() {
  std::fprintf(stderr,
               "usage: grader-runner [--seccomp] SUBMISSION.so   (request on fd 3, results on fd 4)\n"
               "       grader-runner [--seccomp] --zygote        (spawn requests on fd 3: zygote_protocol.h)\n");
  return 64;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  const bool filter = !args.empty() && args.front() == "--seccomp";
  if (filter) args.erase(args.begin());
  if (args.size() != 1) return usage();
  if (args.front() == "--zygote") {
    // Ends without LibTorch's static destructors (a third of a second): the
    // grader waits for its zygotes to end.
    const int code = grader::serve_as_zygote(filter);
    std::fflush(nullptr);
    std::_Exit(code);
  }
  return grader::run_submission(args.front().c_str(), args.front(), filter, -1);
}
