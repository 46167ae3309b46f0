#!/usr/bin/env python3
"""Grades the labelled corpus (tests/submissions/*/{wrong,accepted}) on several
seeds and prints, per exercise, the files whose verdict or missed set differs
from the label on some seed. The default seed follows the file's bytes (the
same file always gets the same verdict); this shows whether that verdict
depends on the luck of the inputs. Exit 1 when any file differs.

    scripts/seed-sweep.py [--seeds 1,2,3,4,5] [--exercise ID ...]
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def label(path):
    """verdict and missed set of an .expect.yaml (the simple form the corpus uses)."""
    verdict, missed = "failed", set()
    with open(path) as f:
        for line in f:
            if line.startswith("verdict:"):
                verdict = line.split(":", 1)[1].strip()
            m = re.match(r"missed:\s*\[(.*)\]", line)
            if m:
                missed = {p.strip() for p in m.group(1).split(",") if p.strip()}
            if line.startswith(("without_nvcc:", "compile_only:")):
                return None  # a CUDA label: checked by the corpus test where it applies
    return verdict, missed


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", default="1,2,3,4,5")
    parser.add_argument("--exercise", nargs="*")
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    base = os.path.join(ROOT, "tests", "submissions")
    exercises = args.exercise or sorted(os.listdir(base))
    bad = 0
    for exercise in exercises:
        files = {}
        for kind in ("wrong", "accepted"):
            folder = os.path.join(base, exercise, kind)
            if not os.path.isdir(folder):
                continue
            for name in sorted(os.listdir(folder)):
                if not name.endswith((".cpp", ".cu")):
                    continue
                if name.endswith(".cu") and not shutil.which("nvidia-smi"):
                    continue  # a kernel only passes where a GPU runs it
                path = os.path.join(folder, name)
                expect = os.path.splitext(path)[0] + ".expect.yaml"
                want = label(expect) if kind == "wrong" else ("passed", set())
                if want is not None:
                    files[path] = want
        if not files:
            print("%s: skipped (no file to grade here; CUDA exercises need a GPU)" % exercise)
            continue
        differ = {}
        for seed in seeds:
            with tempfile.TemporaryDirectory() as out:
                cmd = [os.path.join(ROOT, "grade"), exercise, "--seed", str(seed), "--jobs", "2",
                       "--output", "json=" + out]
                for path in files:
                    cmd += ["--submission", path]
                subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                for path, (verdict, missed) in files.items():
                    stem = os.path.splitext(os.path.basename(path))[0]
                    try:
                        with open(os.path.join(out, stem + ".json")) as f:
                            report = json.load(f)
                    except (OSError, ValueError):
                        differ.setdefault(path, []).append("seed %d: no report" % seed)
                        continue
                    got = {p["id"] for p in report.get("focus_points", []) if p.get("status") == "missed"}
                    if report.get("verdict") != verdict or (verdict != "passed" and got != missed):
                        differ.setdefault(path, []).append(
                            "seed %d: %s, missed %s" % (seed, report.get("verdict"), sorted(got)))
        print("%s: %d files, %d seeds, %d differ from their label on some seed" % (
            exercise, len(files), len(seeds), len(differ)))
        for path, lines in differ.items():
            print("  %s (label: %s %s)" % (os.path.relpath(path, ROOT), files[path][0], sorted(files[path][1])))
            for line in lines:
                print("    " + line)
        bad += len(differ)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
