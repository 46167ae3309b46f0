#!/usr/bin/python3
"""The learner's wait, C++ grader against the Python alternative, in one run.

Interleaved rounds (default 7), medians, ratios to the Python loop:
  python       edit bench/python_peer/mhsa.py (a copy), run its pytest file:
               the loop of a learner practising in Python (Debian's
               python3-torch and python3-pytest)
  edited       ./grade EXERCISE after an edit of the model solution (a copy)
  unchanged    ./grade EXERCISE of the same file again (compiled code cached)
  idiomatic    ./grade after an edit of the solution with `#include
               <torch/torch.h>` added at the top, as real learner code has
  watch        `grade watch`: from saving the edit to the end of the report,
               in one long-lived process
  cold edited, cold unchanged
               the same without the warm grader (GRADE_WARM=off): each
               command starts a grader, which loads LibTorch, and its runner

  bench/vs_python.py [--runs N] [--exercise ID]

Only exercise_mhsa has a Python peer; for another exercise the Python loop
is still the mhsa one (the alternative's cost does not depend much on it).
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Debian's Python, where python3-torch and python3-pytest install.
PYTHON = "/usr/bin/python3"
FOOTER = re.compile(r"^compile [0-9.]+ s.*, run [0-9.]+ s; ")


def cpu_name():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown CPU"


def timed(cmd, cwd=None, env=None):
    start = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def append(path, text):
    with open(path, "a") as f:
        f.write(text)


class Watch:
    """`grade watch` on one file; edit() saves an edit and waits for the report's footer."""

    def __init__(self, exercise, path):
        self.proc = subprocess.Popen(
            [os.path.join(ROOT, "grade"), "watch", exercise, "--submission", path, "--color", "never"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
        self.path = path
        self.footers = 0
        self.cond = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()
        self._wait(1, timeout=300)

    def _read(self):
        for line in self.proc.stdout:
            if FOOTER.match(line.strip()):
                with self.cond:
                    self.footers += 1
                    self.cond.notify_all()

    def _wait(self, count, timeout):
        with self.cond:
            if not self.cond.wait_for(lambda: self.footers >= count, timeout=timeout):
                raise SystemExit("grade watch produced no report within %d s" % timeout)

    def edit(self, text):
        want = self.footers + 1
        start = time.perf_counter()
        append(self.path, text)
        self._wait(want, timeout=300)
        return time.perf_counter() - start

    def close(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--exercise", default="exercise_mhsa")
    args = parser.parse_args()
    grade = os.path.join(ROOT, "grade")
    solutions = os.path.join(ROOT, "solutions", args.exercise)
    solution = os.path.join(solutions, sorted(f for f in os.listdir(solutions) if f.endswith(".cpp"))[0])

    work = tempfile.mkdtemp()
    try:
        py = os.path.join(work, "python")
        shutil.copytree(os.path.join(ROOT, "bench", "python_peer"), py)
        edited = os.path.join(work, "edited.cpp")
        idiomatic = os.path.join(work, "idiomatic.cpp")
        watched = os.path.join(work, "watched", os.path.basename(solution))
        os.makedirs(os.path.dirname(watched))
        shutil.copy(solution, edited)
        shutil.copy(solution, watched)
        with open(solution) as f:
            text = f.read()
        with open(idiomatic, "w") as f:
            f.write("#include <torch/torch.h>\n#include <torch/nn/functional.h>\n" + text)

        print("machine: %d cores, %s" % (os.cpu_count(), cpu_name()))
        print("exercise: %s, submission: %s, rounds: %d (interleaved)" % (
            args.exercise, os.path.relpath(solution, ROOT), args.runs))
        sandbox = subprocess.run([grade, "sandbox"], capture_output=True, text=True).stdout.strip()
        print(sandbox.splitlines()[0] if sandbox else "sandbox: ?")

        pytest = [PYTHON, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_mhsa.py"]
        check = subprocess.run(pytest, cwd=py, capture_output=True, text=True)
        if check.returncode != 0:
            raise SystemExit("the Python peer's tests do not pass:\n" + check.stdout + check.stderr)
        # Warm: the build present, each file graded once.
        for path in (edited, idiomatic):
            subprocess.run([grade, args.exercise, "--submission", path], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
        watch = Watch(args.exercise, watched)

        cold = dict(os.environ, GRADE_WARM="off")
        times = {k: [] for k in ("python", "edited", "unchanged", "idiomatic", "watch", "cold edited",
                                 "cold unchanged")}
        for i in range(args.runs):
            stamp = "%d %.6f" % (i, time.time())
            append(os.path.join(py, "mhsa.py"), "# edit %s\n" % stamp)
            times["python"].append(timed(pytest, cwd=py))
            append(edited, "// edit %s\n" % stamp)
            times["edited"].append(timed([grade, args.exercise, "--submission", edited]))
            times["unchanged"].append(timed([grade, args.exercise, "--submission", edited]))
            append(idiomatic, "// edit %s\n" % stamp)
            times["idiomatic"].append(timed([grade, args.exercise, "--submission", idiomatic]))
            times["watch"].append(watch.edit("// watched edit %s\n" % stamp))  # not a cached compile
            append(edited, "// cold edit %s\n" % stamp)
            times["cold edited"].append(timed([grade, args.exercise, "--submission", edited], env=cold))
            times["cold unchanged"].append(timed([grade, args.exercise, "--submission", edited], env=cold))
        watch.close()

        base = statistics.median(times["python"])
        print("\n%-15s %8s %10s   runs (s)" % ("loop", "median", "/ python"))
        for name, values in times.items():
            med = statistics.median(values)
            print("%-15s %7.2fs %10.2f   %s" % (name, med, med / base, " ".join("%.2f" % v for v in values)))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
