// The grader's own tensor work runs one computation at a time (check.h:
// numerics_lock). A batch grades several files at once, and the BLAS library
// LibTorch calls may not be safe from two threads: Debian's serial OpenBLAS
// 0.3.21 gave a wrong double product in about 2% of 128x128 products called
// from three threads at once (docs/testing.md, "Results that depend on load").
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "checks/check.h"

namespace grader {
namespace {

// A suite whose every method counts how many of its calls are under way at
// once, and multiplies two matrices, checking the product against one
// computed before any thread started.
class CountingSuite : public Suite {
 public:
  CountingSuite() {
    auto generator = at::make_generator<at::CPUGeneratorImpl>(7);
    a_ = at::randn({128, 128}, generator, at::kDouble);
    b_ = at::randn({128, 128}, generator, at::kDouble);
    product_ = at::mm(a_, b_);
  }
  int most_at_once() const { return most_; }
  int wrong_products() const { return wrong_; }

 protected:
  std::vector<wire::Record> plan_cases(uint64_t) override {
    work();
    return {};
  }
  std::vector<CheckResult> judge_cases(const JudgeInput&) override {
    work();
    return {};
  }
  std::vector<double> time_reference(const std::vector<wire::Record>&) const override {
    work();
    return {};
  }
  std::vector<AttentionFigure> draw_figures(const JudgeInput&) override {
    work();
    return {};
  }

 private:
  void work() const {
    const int now = ++under_way_;
    int seen = most_;
    while (now > seen && !most_.compare_exchange_weak(seen, now)) {
    }
    if (!at::equal(at::mm(a_, b_), product_)) ++wrong_;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    --under_way_;
  }
  at::Tensor a_, b_, product_;
  mutable std::atomic<int> under_way_{0}, most_{0}, wrong_{0};
};

TEST(NumericsLock, OneSuiteMethodAtATimeAcrossThreads) {
  CountingSuite first, second;
  JudgeInput input;
  auto calls = [&](Suite& suite) {
    for (int i = 0; i < 60; ++i) {
      switch (i % 4) {
        case 0: suite.plan(1); break;
        case 1: suite.judge(input); break;
        case 2: suite.reference_seconds({}); break;
        default: suite.figures(input); break;
      }
    }
  };
  std::vector<std::thread> threads;
  for (Suite* suite : {static_cast<Suite*>(&first), static_cast<Suite*>(&second), static_cast<Suite*>(&first)})
    threads.emplace_back(calls, std::ref(*suite));
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(std::max(first.most_at_once(), second.most_at_once()), 1);
  EXPECT_EQ(first.wrong_products() + second.wrong_products(), 0);
}

TEST(NumericsLock, TheGraderComputesOnOneIntraOpThread) {
  CountingSuite suite;
  suite.plan(1);
  EXPECT_EQ(at::get_num_threads(), 1);
}

}  // namespace
}  // namespace grader
