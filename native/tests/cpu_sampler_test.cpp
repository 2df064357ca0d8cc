// cpu_sampler_test.cpp: CpuSampler on hand-computed cases for every step,
// and against the reference sampler on random rows.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>

#include "random_cases.h"
#include "row_passes.h"
#include "top_p.h"
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
  md::SamplingInputs in{k.params, k.window.data(), k.biasTokens.data(), k.biasValues.data(),
                        k.mask.empty() ? nullptr : k.mask.data()};
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
  c.params.min_p = 0.05f;                              // ln 0.05 = -3.0
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

// Temperature sampling finds tokens far below the best score from the
// noise cells that could lift them over it (NoiseArgmax's
// scoreTokensOfCells, through the hash's inverse), not by hashing them: rows
// with one token on top and a long bulk 13-14.5 temperatures below it. Every
// draw must equal the reference's, and bulk tokens more than 13.2
// temperatures below the top's score (found only from their cells) must win
// often enough to have tested it.
TEST_P(Steps, TokensFarBelowTheBestWinAsOftenAsTheirNoiseSays) {
  std::mt19937 rng(77);
  int farWins = 0;
  for (int c = 0; c < 200; ++c) {
    const float temperature = std::vector<float>{0.5f, 1.0f, 2.0f}[c % 3];
    const uint32_t vocab = 60000 + rng() % 70000;
    std::uniform_real_distribution<float> gap(13.f, 14.5f);
    std::vector<float> values(vocab);
    for (float& v : values) v = 20.f - temperature * gap(rng);
    const uint32_t top = rng() % vocab;
    values[top] = 20.f;
    Case k = makeCase(std::move(values), GetParam());
    k.params.temperature = temperature;
    k.params.seed = 1000 + uint32_t(c);
    const uint32_t token = run(k);
    ASSERT_EQ(token, reference::sample(k)) << "case " << c;
    const md_u32 key = md_noise_key(k.params.seed, k.params.position);
    const float topScore = 20.f + temperature * md_token_noise(key, top);
    farWins += k.values[token] < topScore - 13.2f * temperature;
  }
  EXPECT_GE(farWins, 3) << "too few far winners to have tested finding them";
}

}  // namespace

// Top-p from the heaviest levels (top_p.h, topPFromHeavyLevels) gives the
// whole-row histogram's answer whenever it answers, for float16 rows and
// float32 ones (whose histogram has coarse bins, walked level by level
// inside the boundary's bin): on language-model-shaped rows (a few tokens
// near the top, the rest far below), flat rows, and rows built so that the
// boundary falls just at a heavy level's cumulative mass (where the light
// tokens decide and it must give up). It must answer for most
// model-shaped rows, or it saves nothing.
namespace topp {

template <class Logits>
int32_t wholeRow(const md::ScannedRow<Logits>& row, const md::TopPContext<Logits>& ctx, float p,
                 md::SamplerScratch& s) {
  const int32_t low = md::binMasses(row, Logits::kNegInf, ctx, s);
  int32_t tau = 0;
  EXPECT_TRUE(md::walkBins(row, Logits::kNegInf, low, ctx, double(p) * md::sumFromTop(s.mass), true, s, &tau));
  return tau;
}

template <class Logits>
void heavyLevelsGiveTheWholeRowAnswer() {
  std::mt19937 rng(2026);
  md::SamplerScratch s, whole;
  md::RowMaxima maxima;
  int modelShaped = 0, answered = 0, gaveUpNearBoundary = 0;
  for (int c = 0; c < 400; ++c) {
    const uint32_t vocab = 5000 + rng() % 60000;
    const int shape = c % 4;  // 0-1 model-shaped, 2 flat, 3 a boundary planted at a heavy level
    std::normal_distribution<float> bulk(0.f, shape == 2 ? 1.0f : 2.0f);
    std::vector<typename Logits::Bits> row(vocab);
    for (auto& h : row) h = Logits::fromFloat(bulk(rng));
    const int spikes = shape == 2 ? 0 : 3 + int(rng() % 12);
    std::uniform_real_distribution<float> spike(10.f, 18.f);
    for (int j = 0; j < spikes; ++j) row[rng() % vocab] = Logits::fromFloat(spike(rng));
    // Model-shaped rows at temperatures up to 1, where the bulk weighs below
    // 2^-16 of the top (hotter, it is heavy itself, and the whole row counts).
    const float temperature = std::uniform_real_distribution<float>(0.5f, shape < 2 ? 1.0f : 1.5f)(rng);
    float p = std::uniform_real_distribution<float>(0.5f, 0.99f)(rng);
    const auto scanned = md::scanRow<Logits>(row.data(), vocab, maxima);
    const md::TopPContext<Logits> ctx{Logits::value(scanned.top), temperature};
    if (shape == 3) {
      // p at the heavy levels' cumulative mass up to a spike, over their total:
      // the light tokens' mass is what decides which level the walk stops at.
      std::vector<float> weights;
      for (auto h : row)
        if (Logits::value(Logits::key(h)) >= 10.f) weights.push_back(ctx.weight(Logits::key(h)));
      std::sort(weights.rbegin(), weights.rend());
      double total = 0, upTo = 0;
      for (float w : weights) total += w;
      for (size_t j = 0; j + 1 < weights.size() && j < 2; ++j) upTo += weights[j];
      p = float(upTo / total);
    }
    const int32_t expected = wholeRow(scanned, ctx, p, whole);
    int32_t tau = 0;
    const bool answers = md::topPFromHeavyLevels(scanned, ctx, p, s, &tau);
    if (answers) {
      EXPECT_EQ(tau, expected) << "case " << c;
    }
    EXPECT_EQ(md::topPThreshold(scanned, Logits::kNegInf, temperature, p, s), expected) << "case " << c;
    if (shape < 2) ++modelShaped, answered += answers;
    if (shape == 3) gaveUpNearBoundary += !answers;
  }
  EXPECT_GE(answered, modelShaped * 9 / 10) << "model-shaped rows answered from the heavy levels";
  EXPECT_GT(gaveUpNearBoundary, 0) << "no planted boundary made it give up: the test plants nothing";
}

TEST(TopP, HeavyLevelsGiveTheWholeRowHistogramsAnswerOnFloat16Rows) {
  heavyLevelsGiveTheWholeRowAnswer<md::HalfLogits>();
}
TEST(TopP, HeavyLevelsGiveTheWholeRowHistogramsAnswerOnFloat32Rows) {
  heavyLevelsGiveTheWholeRowAnswer<md::FloatLogits>();
}

}  // namespace topp
