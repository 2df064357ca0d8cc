// cpu_sampler_test.cpp: CpuSampler on hand-computed cases for every step,
// and against the reference sampler on random rows.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>

#include "random_cases.h"
#include "reference_sampler.h"

namespace {

using reference::Case;

md_sampling_params greedy(uint32_t vocab) { return md::greedySamplingParams(vocab); }

// Samples a case with the optimised sampler, as float16 or float32.
uint32_t run(const Case& c) {
  static md::CpuSampler sampler;
  Case k = c;
  k.params.vocab_size = uint32_t(c.values.size());
  k.params.history_count = uint32_t(c.window.size());
  k.params.history_window = uint32_t(c.window.size());
  k.params.bias_count = uint32_t(c.biasTokens.size());
  md::SamplingInputs in{k.params, k.window.data(), k.biasTokens.data(), k.biasValues.data(), k.mask.empty() ? nullptr : k.mask.data()};
  std::vector<uint16_t> halves;
  md::LogitsRow row{c.values.data(), md::LogitsFormat::Float32, uint32_t(c.values.size())};
  if (c.isHalf) {
    for (float v : c.values) halves.push_back(md::halfFromFloat(v));
    row = {halves.data(), md::LogitsFormat::Float16, uint32_t(halves.size())};
  }
  EXPECT_EQ(md::checkSamplingInputs(row, in), nullptr);
  return sampler.sample(row, in);
}

Case makeCase(std::vector<float> values, bool isHalf) {
  Case c;
  c.values = std::move(values);
  c.isHalf = isHalf;
  c.params = greedy(uint32_t(c.values.size()));
  return c;
}

// The set of tokens drawn over many positions.
std::set<uint32_t> drawn(Case c, int positions = 3000) {
  std::set<uint32_t> tokens;
  for (int i = 0; i < positions; ++i) {
    c.params.position = uint32_t(i);
    tokens.insert(run(c));
  }
  return tokens;
}

class Steps : public ::testing::TestWithParam<bool> {};  // parameter: float16 row
INSTANTIATE_TEST_SUITE_P(Formats, Steps, ::testing::Values(false, true),
                         [](auto& info) { return info.param ? "float16" : "float32"; });

TEST_P(Steps, GreedyPicksTheLowestIndexAmongTies) {
  EXPECT_EQ(run(makeCase({1, 3, 3, 2}, GetParam())), 1u);
  EXPECT_EQ(run(makeCase({-0.0f, 0.0f}, GetParam())), 0u);  // -0 == +0
}

TEST_P(Steps, VocabularyOfOneAlwaysGivesTokenZero) {
  Case c = makeCase({-3}, GetParam());
  c.params.temperature = 1.5f;
  EXPECT_EQ(drawn(c, 50), std::set<uint32_t>{0});
}

TEST_P(Steps, NaNIsMinusInfinityAndInfinityIsTheLargestFinite) {
  EXPECT_EQ(run(makeCase({NAN, 1}, GetParam())), 1u);
  float largest = GetParam() ? 65504.0f : 3.4028234663852886e38f;
  EXPECT_EQ(run(makeCase({largest, INFINITY}, GetParam())), 0u);  // a tie after sanitising
  EXPECT_EQ(run(makeCase({-INFINITY, NAN}, GetParam())), MD_NO_TOKEN);
}

TEST_P(Steps, AllMinusInfinityHasNoToken) {
  Case c = makeCase({-INFINITY, -INFINITY, -INFINITY}, GetParam());
  EXPECT_EQ(run(c), MD_NO_TOKEN);
  c.params.temperature = 1;
  EXPECT_EQ(run(c), MD_NO_TOKEN);
  Case banned = makeCase({1, 2}, GetParam());
  banned.biasTokens = {0, 1};
  banned.biasValues = {-INFINITY, -INFINITY};
  EXPECT_EQ(run(banned), MD_NO_TOKEN);
}

TEST_P(Steps, BiasIsAddedAndIdsOutsideTheVocabularyAreIgnored) {
  Case c = makeCase({1, 2}, GetParam());
  c.biasTokens = {0, 7};
  c.biasValues = {1.5f, 100.0f};
  EXPECT_EQ(run(c), 0u);  // 2.5 > 2
  c.biasValues = {0.5f, 100.0f};
  EXPECT_EQ(run(c), 1u);  // 1.5 < 2
  c.biasTokens = {1};
  c.biasValues = {-INFINITY};
  EXPECT_EQ(run(c), 0u);  // a ban
}

TEST_P(Steps, AMaskRefusesTokensBeforeBiasAndFilters) {
  Case c = makeCase({1, 5, 2, 3}, GetParam());
  c.params.flags = MD_FLAG_TOKEN_MASK;
  c.mask = {0b1101};  // token 1, the argmax, refused
  EXPECT_EQ(run(c), 3u);
  c.biasTokens = {1};
  c.biasValues = {100.0f};  // a bias cannot bring a refused token back
  EXPECT_EQ(run(c), 3u);
  c.params.temperature = 1.0f;
  c.params.top_k = 1;  // top-k counts only allowed tokens
  EXPECT_EQ(run(c), 3u);
  c.mask = {0};
  EXPECT_EQ(run(c), MD_NO_TOKEN);
}

TEST(CpuSamplerInputs, AMaskFlagWithoutMaskDataIsRefused) {
  std::vector<float> values{1, 2};
  md::LogitsRow row{values.data(), md::LogitsFormat::Float32, 2};
  md::SamplingInputs in{md::greedySamplingParams(2), nullptr, nullptr, nullptr};
  in.params.flags = MD_FLAG_TOKEN_MASK;
  EXPECT_STREQ(md::checkSamplingInputs(row, in), "mask: no data");
  in.params.flags = 4;
  EXPECT_STREQ(md::checkSamplingInputs(row, in), "flags: unknown flag bits");
}

TEST_P(Steps, RepeatPenaltyDividesPositiveAndMultipliesNegativeLogits) {
  Case c = makeCase({2.0f, 1.9f}, GetParam());
  c.params.repeat_penalty = 1.1f;
  c.window = {0};
  EXPECT_EQ(run(c), 1u);  // 2 / 1.1 = 1.82 < 1.9
  Case negative = makeCase({-1.0f, -1.05f}, GetParam());
  negative.params.repeat_penalty = 1.1f;
  negative.window = {0};
  EXPECT_EQ(run(negative), 1u);  // -1 * 1.1 = -1.1 < -1.05
}

TEST_P(Steps, PenaltiesApplyOncePerDistinctToken) {
  Case c = makeCase({2.4f, 2.0f}, GetParam());
  c.params.repeat_penalty = 1.0f;
  c.params.presence_penalty = 0.3f;
  c.window = {0, 0, 0, 0};
  EXPECT_EQ(run(c), 0u);  // once: 2.4 - 0.3 = 2.1 > 2; per occurrence it would be 1.2
}

TEST_P(Steps, FrequencyPenaltyCountsOccurrencesInTheWindow) {
  Case c = makeCase({3.0f, 2.0f}, GetParam());
  c.params.frequency_penalty = 0.3f;
  c.window = {0, 0, 0};
  EXPECT_EQ(run(c), 0u);  // 3 - 0.9 = 2.1
  c.params.frequency_penalty = 0.4f;
  EXPECT_EQ(run(c), 1u);  // 3 - 1.2 = 1.8
  c.window = {0, 9, 9};   // ids >= V are ignored
  EXPECT_EQ(run(c), 0u);  // 3 - 0.4 = 2.6
}

TEST_P(Steps, TopKKeepsEveryTieAtItsBoundary) {
  Case c = makeCase({5, 4, 4, 1}, GetParam());
  c.params.temperature = 3;
  c.params.top_k = 2;
  EXPECT_EQ(drawn(c), (std::set<uint32_t>{0, 1, 2}));
  c.params.top_k = 1;
  EXPECT_EQ(drawn(c), std::set<uint32_t>{0});
}

TEST_P(Steps, TopPKeepsTheSmallestLevelSetReachingP) {
  // Probabilities 0.5, 0.3, 0.2 at T = 1.
  Case c = makeCase({std::log(0.5f), std::log(0.3f), std::log(0.2f)}, GetParam());
  c.params.temperature = 1;
  c.params.top_p = 0.45f;
  EXPECT_EQ(drawn(c), std::set<uint32_t>{0});
  c.params.top_p = 0.7f;
  EXPECT_EQ(drawn(c), (std::set<uint32_t>{0, 1}));
  c.params.top_p = 0.85f;
  EXPECT_EQ(drawn(c), (std::set<uint32_t>{0, 1, 2}));
}

TEST_P(Steps, TopPTiesAtTheBoundarySurvive) {
  Case c = makeCase({1, 0, 0, -5}, GetParam());
  c.params.temperature = 1;
  c.params.top_p = 0.75f;  // token 0 alone has 0.57 of the mass: the tied level joins whole
  EXPECT_EQ(drawn(c), (std::set<uint32_t>{0, 1, 2}));
}

TEST_P(Steps, MinPUsesTheFilterTemperature) {
  Case c = makeCase({0, -4, -2.5f}, GetParam());
  c.params.temperature = 2;
  c.params.min_p = 0.05f;  // ln 0.05 = -3.0
  EXPECT_EQ(drawn(c), (std::set<uint32_t>{0, 1, 2}));  // 'sampling': tau = 2 ln q = -6
  c.params.flags = MD_FLAG_UNIT_FILTER_TEMPERATURE;
  EXPECT_EQ(drawn(c), (std::set<uint32_t>{0, 2}));  // 'unit': tau = ln q = -3
}

TEST_P(Steps, TemperatureZeroIgnoresFiltersAndNoise) {
  Case c = makeCase({1, 3, 2}, GetParam());
  c.params.top_k = 1;
  c.params.min_p = 0.5f;
  c.params.seed = 99;
  EXPECT_EQ(drawn(c, 20), std::set<uint32_t>{1});
}

// Random rows exercising every path of the optimised sampler (sorted and
// histogram top-p, float32 coarse bins, heavy ties, edits), against the
// reference, token for token.
TEST(CpuSampler, MatchesTheReferenceOnRandomRows) {
  std::mt19937 rng(2024);
  int cases = 0;
  for (int c = 0; c < 1500; ++c) {
    uint32_t vocab = std::vector<uint32_t>{1, 2, 7, 64, 65, 1000, 5000, 20000, 70000}[rng() % 9];
    Case k = testing_cases::randomCase(rng, vocab, c % 5, c % 2 == 0);
    ASSERT_EQ(run(k), reference::sample(k)) << "case " << c << " V=" << vocab << " half=" << k.isHalf;
    ++cases;
  }
  EXPECT_EQ(cases, 1500);
}

}  // namespace
