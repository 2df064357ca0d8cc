// weight_bounds.h: upper bounds on sums of top-p weights, without one exp
// per token.
//
// A logit's weight is md_exp((v - top) / T) (top_p.h). With
// y = x log2(e), 2^y <= 2^floor(y) (1 + frac(y)) because 2^f lies under its
// chord on [0, 1]; the right side is the float whose bits are
// (y + 127) 2^23, rounded up. So each bound is at most 6.2% over the weight,
// costs a few vector operations, and the sums carry a margin of 2^-10 for
// float rounding (the largest of those errors is below 2^-16).
#pragma once
#include <cstdint>

#include "logit_keys.h"

namespace md {

// The sum over `count` keys (the row type's keys widened to int32) of the
// weight of min(key, highest), times `multiplicity`: a bound on the tokens
// that each key stands for when it is the largest of `multiplicity` tokens.
double keyWeightBound(HalfLogits, const int32_t* keys, uint32_t count, int32_t highest, uint32_t multiplicity,
                      float top, float temperature);
double keyWeightBound(FloatLogits, const int32_t* keys, uint32_t count, int32_t highest, uint32_t multiplicity,
                      float top, float temperature);

// The sum of the weights of the row's tokens whose key is below `below`.
double rowWeightBound(HalfLogits, const uint16_t* bits, uint32_t count, int32_t below, float top, float temperature);
// The same without F16C (what x86-64 CPUs without it run), for its test.
double rowWeightBoundWithoutF16c(const uint16_t* bits, uint32_t count, int32_t below, float top, float temperature);
double rowWeightBound(FloatLogits, const uint32_t* bits, uint32_t count, int32_t below, float top, float temperature);

}  // namespace md
