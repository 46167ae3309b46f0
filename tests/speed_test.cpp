// The speed run's parent side (grader/report/speed.h), on any machine: the `speed:`
// of every exercise plans, a malformed one is refused with the reason, and a
// timing no correct forward could give is flagged from the numbers alone. The
// timing itself needs a GPU (scripts/gpu-check.sh runs it there).
#include "report/speed.h"
#include "wire/keys.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "base/errors.h"
#include "project_root.h"

namespace grader {
namespace {
namespace fs = std::filesystem;

using test_support::project_root;

std::string read_text(const fs::path& file) {
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The exercise's yaml with its `speed:` block replaced by `block`.
std::string with_speed(const std::string& id, const std::string& block) {
  auto text = read_text(project_root() / "exercises" / id / "exercise.yaml");
  const auto begin = text.find("\nspeed:\n");
  const auto end = text.find("\n\n", begin + 1);
  EXPECT_NE(begin, std::string::npos) << id << " has no speed: block";
  return text.substr(0, begin + 1) + block + text.substr(end + 1);
}

std::string load_error(const std::string& id, const std::string& block) {
  try {
    auto exercise = parse_exercise(with_speed(id, block), project_root() / "exercises" / id);
    plan_speed(exercise, 1, "cuda");
    return "";
  } catch (const ConfigError& error) {
    return error.what();
  }
}

TEST(Speed, EveryExercisesSpeedPlansItsSizes) {
  size_t timed = 0;
  for (const auto& id : list_exercises(project_root() / "exercises")) {
    auto exercise = load_exercise(project_root() / "exercises" / id);
    if (exercise.speed.sizes.empty()) continue;
    ++timed;
    auto request = plan_speed(exercise, 7, "cuda");
    EXPECT_EQ(request.string("kind"), "speed");
    EXPECT_EQ(request.string("device"), "cuda");
    EXPECT_EQ(request.integer("speed.sizes"), static_cast<int64_t>(exercise.speed.sizes.size()));
    for (size_t i = 0; i < exercise.speed.sizes.size(); ++i) {
      size_t shapes = 0;
      for (const auto& [key, text] : request.strings) {
        if (key.rfind("speed." + std::to_string(i) + ".shape.", 0) == 0) ++shapes;
      }
      EXPECT_GE(shapes, 1u) << id << " size " << i;
    }
    for (const auto& [name, expression] : exercise.signature.constructor) {
      EXPECT_TRUE(request.reals.count(wire::key::ctor(name))) << id << ": " << name;
    }
  }
  EXPECT_GE(timed, 3u) << "the attention exercises are timed on a GPU";
}

TEST(Speed, MalformedSpeedIsRefusedWithTheReason) {
  auto contains = [](const std::string& error, const std::string& part) {
    return error.find(part) != std::string::npos;
  };
  EXPECT_EQ(load_error("exercise_sdpa", "speed:\n  baseline: attention\n  sizes:\n    - {B: 1, H: 2, Nq: 8, Nk: 8, "
                                        "d_k: 4, d_v: 4}\n"),
            "");
  EXPECT_TRUE(contains(load_error("exercise_sdpa", "speed:\n  baseline: flash\n  sizes: [{B: 1}]\n"),
                       "attention or self_attention"));
  EXPECT_TRUE(contains(load_error("exercise_sdpa", "speed:\n  baseline: attention\n  sizes: []\n"), "non-empty"));
  EXPECT_TRUE(contains(load_error("exercise_sdpa", "speed:\n  baseline: attention\n  sizes: [{B: -1}]\n"),
                       "not negative"));
  EXPECT_TRUE(contains(load_error("exercise_sdpa", "speed:\n  baseline: attention\n  fast: yes\n  sizes: [{B: 1}]\n"),
                       "'speed.fast' is not known"));
  // A size without a dimension the signature needs.
  EXPECT_TRUE(contains(load_error("exercise_sdpa", "speed:\n  baseline: attention\n  sizes: [{B: 1, H: 2}]\n"),
                       "speed:"));
  // self_attention needs a (B, N, D) input and the number of heads.
  EXPECT_TRUE(contains(load_error("exercise_sdpa", "speed:\n  baseline: self_attention\n  heads: H\n  sizes: [{B: 1}]\n"),
                       "(B, N, D)"));
  EXPECT_TRUE(contains(load_error("exercise_mhsa", "speed:\n  baseline: self_attention\n  sizes: [{B: 1}]\n"),
                       "'heads'"));
  // The module is built once: its constructor's arguments cannot vary by size.
  EXPECT_TRUE(contains(load_error("exercise_mhsa", "speed:\n  baseline: self_attention\n  heads: H\n  sizes:\n"
                                                   "    - {B: 1, N: 8, D: 16, H: 2, dropout_pct: 0}\n"
                                                   "    - {B: 1, N: 8, D: 32, H: 2, dropout_pct: 0}\n"),
                       "different values"));
}

// What the child sends for a correct, plausible forward on exercise_sdpa's
// sizes: 1 TB/s copy, 50 TFLOP/s matmul, the learner 2x the unfused baseline.
// A reply whose driver wrote `outputs`.
wire::CaseReply reply(wire::Record outputs) {
  wire::CaseReply answer;
  answer.outputs = std::move(outputs);
  return answer;
}

wire::Record plausible_response(const Exercise& exercise) {
  wire::Record response;
  response.strings["speed.device_name"] = "Test GPU";
  response.strings["speed.method"] = "CUDA events";
  response.reals["speed.copy_gb_s"] = 1000;
  response.reals["speed.matmul_tflops"] = 50;
  for (size_t i = 0; i < exercise.speed.sizes.size(); ++i) {
    const auto key = "speed." + std::to_string(i) + ".";
    response.reals[key + "learner_ms"] = 20;
    response.reals[key + "unfused_ms"] = 10;
    response.reals[key + "fused_ms"] = 2;
    response.reals[key + "input_bytes"] = 3e6;
    response.reals[key + "output_bytes"] = 1e7;
    response.reals[key + "max_error"] = 1e-6;
    response.reals[key + "learner_peak_mb"] = 300;
    response.reals[key + "fused_peak_mb"] = 2;
    response.ints[key + "same_output"] = 0;
  }
  return response;
}

TEST(Speed, APlausibleRunIsTabledWithoutFlags) {
  auto exercise = load_exercise(project_root() / "exercises" / "exercise_sdpa");
  auto request = plan_speed(exercise, 1, "cuda");
  auto report = read_speed(exercise, request, reply(plausible_response(exercise)));
  ASSERT_TRUE(report.ran);
  ASSERT_EQ(report.rows.size(), exercise.speed.sizes.size());
  EXPECT_FALSE(report.suspicious());
  // (B, H, N, N) float32 for the last size: 1 x 16 x 8192 x 8192 x 4 bytes.
  EXPECT_DOUBLE_EQ(report.rows.back().attention_matrix_mb, 16.0 * 8192 * 8192 * 4 / (1024.0 * 1024.0));
  auto text = speed_text(report);
  EXPECT_NE(text.find("Speed on Test GPU"), std::string::npos) << text;
  EXPECT_NE(text.find("2.00x"), std::string::npos) << text;   // against the unfused
  EXPECT_NE(text.find("10.00x"), std::string::npos) << text;  // against the fused
  EXPECT_EQ(text.find("suspicious"), std::string::npos) << text;
}

TEST(Speed, WhatNoCorrectForwardCouldDoIsFlagged) {
  auto exercise = load_exercise(project_root() / "exercises" / "exercise_sdpa");
  auto request = plan_speed(exercise, 1, "cuda");
  auto response = plausible_response(exercise);
  // Size 0: faster than reading the inputs and writing the outputs at the copy rate.
  response.reals["speed.0.learner_ms"] = 0.001;
  // Size 1: the same output for two different inputs.
  response.ints["speed.1.same_output"] = 1;
  // Size 2: arithmetic at 10x the measured matmul rate, and an output that is not attention.
  const double flops = 2.0 * 16 * 8192 * 8192 * (64 + 64);
  response.reals["speed.2.learner_ms"] = flops / 500e12 * 1e3;
  response.reals["speed.2.max_error"] = 0.5;
  auto report = read_speed(exercise, request, reply(response));
  ASSERT_EQ(report.rows.size(), 3u);
  EXPECT_TRUE(report.suspicious());
  // (so fast that the arithmetic is impossible too)
  ASSERT_EQ(report.rows[0].flags.size(), 2u);
  EXPECT_NE(report.rows[0].flags[0].find("copy rate"), std::string::npos);
  EXPECT_NE(report.rows[0].flags[1].find("matmul rate"), std::string::npos);
  ASSERT_EQ(report.rows[1].flags.size(), 1u);
  EXPECT_NE(report.rows[1].flags[0].find("same output"), std::string::npos);
  ASSERT_EQ(report.rows[2].flags.size(), 2u);
  EXPECT_NE(report.rows[2].flags[0].find("matmul rate"), std::string::npos);
  EXPECT_NE(report.rows[2].flags[1].find("fused kernel"), std::string::npos);
  EXPECT_NE(speed_text(report).find("! suspicious"), std::string::npos);
}

TEST(Speed, AFailedRunSaysWhyAndAFailedSizeKeepsTheOthers) {
  auto exercise = load_exercise(project_root() / "exercises" / "exercise_sdpa");
  auto request = plan_speed(exercise, 1, "cuda");
  wire::CaseReply stopped;
  stopped.error = "CUDA out of memory";
  auto report = read_speed(exercise, request, stopped);
  EXPECT_FALSE(report.ran);
  EXPECT_NE(report.note.find("CUDA out of memory"), std::string::npos);
  EXPECT_NE(speed_text(report).find("not timed"), std::string::npos);

  auto response = plausible_response(exercise);
  response.strings["speed.2.error"] = "CUDA out of memory. Tried to allocate 4.00 GiB";
  report = read_speed(exercise, request, reply(response));
  ASSERT_TRUE(report.ran);
  EXPECT_EQ(report.rows[2].error, "CUDA out of memory. Tried to allocate 4.00 GiB");
  EXPECT_TRUE(report.rows[0].error.empty());
  EXPECT_NE(speed_text(report).find("your code failed at this size"), std::string::npos);

  // The grader's own baselines failing is said as such, never blamed on the learner.
  response = plausible_response(exercise);
  response.strings["speed.1.baseline_error"] = "no kernel image is available";
  report = read_speed(exercise, request, reply(response));
  EXPECT_TRUE(report.rows[1].error.empty());
  EXPECT_EQ(report.rows[1].baseline_error, "no kernel image is available");
  EXPECT_NE(speed_text(report).find("the grader's baselines failed"), std::string::npos);
}

}  // namespace
}  // namespace grader
