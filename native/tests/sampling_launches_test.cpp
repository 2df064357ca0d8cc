// sampling_launches_test.cpp: the one list of a sampling step's launches,
// checked structurally: which kernels each plan takes, which wide steps
// are left out for which params, and the plans no kernel runs. That the
// launches give the sampler's tokens is checked where they run: the
// kernel sampler on the emulator (kernel_sampler_test.cpp) and the tables
// (test/agreement.test.ts, test/chain.test.ts).
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "sampling_launches.h"

namespace md {
namespace {

std::vector<std::string> kernels(const SamplingPlan& plan) {
  std::vector<std::string> k;
  for (const SamplingLaunch& l : samplingLaunches(plan)) k.push_back(l.kernel);
  return k;
}

SamplingPlan widePlan(bool edits, bool histogram, bool masked) {
  SamplingPlan p;
  p.vocab = 32000;
  p.sample = true;
  p.wide = true;
  p.edits = edits;
  p.histogram = histogram;
  p.masked = masked;
  return p;
}

TEST(SamplingLaunches, TheWideStepsWithoutWorkAreLeftOut) {
  using V = std::vector<std::string>;
  const V all = {"md_sample_wide_prepare_f16", "md_sample_wide_edit_f16",  "md_sample_wide_count_f16",
                 "md_sample_wide_filter_f16",  "md_sample_wide_noise_f16", "md_sample_wide_pick_f16"};
  EXPECT_EQ(kernels(widePlan(true, false, false)), all);
  EXPECT_EQ(kernels(widePlan(false, false, false)), (V{"md_sample_wide_count_f16", "md_sample_wide_filter_f16",
                                                       "md_sample_wide_noise_f16", "md_sample_wide_pick_f16"}));
  for (const bool histogram : {true, false})
    EXPECT_EQ(kernels(widePlan(false, histogram, !histogram)).front(), "md_sample_wide_prepare_f16");
}

TEST(SamplingLaunches, RowPassesSpreadOverTheGroupsAndOnlyThePickWritesTheToken) {
  SamplingPlan plan = widePlan(true, true, false);
  plan.groups = 7;
  for (const SamplingLaunch& l : samplingLaunches(plan)) {
    const bool rowPass = l.threadgroups > 1;
    EXPECT_EQ(l.tokensPerThreadgroup, rowPass ? (32000u + 6) / 7 : 32000u) << l.kernel;
    EXPECT_EQ(l.role, std::string(l.kernel) == "md_sample_wide_pick_f16" ? LaunchRole::Pick : LaunchRole::Step)
        << l.kernel;
    EXPECT_EQ(l.buffers.size(), 10u);
  }
}

TEST(SamplingLaunches, ArgmaxPlansTakeTheirFormatsKernels) {
  SamplingPlan plan;
  plan.vocab = 151936;
  plan.half = false;
  plan.rows = 5;
  const std::vector<SamplingLaunch> rows = samplingLaunches(plan);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_STREQ(rows[0].kernel, "md_argmax_f32");
  EXPECT_EQ(rows[0].threadgroups, 5u);
  plan.rows = 1;
  plan.wide = true;
  plan.half = true;
  EXPECT_EQ(kernels(plan), (std::vector<std::string>{"md_argmax_slices_f16", "md_argmax_pick_f16"}));
  EXPECT_EQ(samplingLaunches(plan)[0].threadgroups, md_wide_groups(151936));
}

TEST(SamplingLaunches, WorkFollowsTheParams) {
  md_sampling_params p{};
  p.vocab_size = 1000;
  p.repeat_penalty = 1.1f;
  p.history_window = 64;
  p.top_p = 1.f;
  p.temperature = 0.8f;
  EXPECT_FALSE(samplingWork(p, false).edits);  // no history yet
  EXPECT_TRUE(samplingWork(p, true).edits);    // a chain's history grows
  EXPECT_FALSE(samplingWork(p, true).histogram);
  p.top_k = 40;
  EXPECT_TRUE(samplingWork(p, true).histogram);
  p.flags = MD_FLAG_TOKEN_MASK;
  EXPECT_TRUE(samplingWork(p, true).masked);
}

TEST(SamplingLaunches, PlansNoKernelRunsAreErrors) {
  SamplingPlan plan;
  plan.vocab = 100;
  plan.sample = true;
  plan.half = false;
  EXPECT_THROW(samplingLaunches(plan), std::invalid_argument);
  plan.half = true;
  plan.wide = true;
  plan.rows = 2;
  try {
    samplingLaunches(plan);
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "rows: a wide launch samples one row, got 2");
  }
}

}  // namespace
}  // namespace md
