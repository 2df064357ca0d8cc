// md_sampling_steps.h: the steps of docs/sampling.md as threadgroup
// functions, shared by md_sample_f16 (sampling.metal: one threadgroup per
// row) and the wide kernels (sampling_wide.metal: one row over many
// threadgroups). A step that reads tokens takes the range it covers, so
// the same code serves a whole row or one threadgroup's slice of it.
//
// What makes the two forms give the same token whatever the launch: every
// result is either integer (counts, keys, indices), a max with the lowest
// index among ties (order-free), or top-p's float masses, which are summed
// in an order fixed by the keys alone (md_top_p_key), never by threads.
#ifndef MD_SAMPLING_STEPS_H
#define MD_SAMPLING_STEPS_H

#include "md_kernel.h"

// The tokens [begin, end) of a row that thread `first` of `stride` visits:
// first, first + stride, ... from begin.
struct md_token_range {
  uint begin;
  uint end;
  uint first;
  uint stride;
};

// A whole row by one threadgroup.
inline md_token_range md_row_range(uint vocab, uint tid, uint threads) {
  md_token_range r;
  r.begin = 0;
  r.end = vocab;
  r.first = tid;
  r.stride = threads;
  return r;
}

// Threadgroup `group` of `groups`'s slice of a row: consecutive tokens, a
// multiple of 32 each (the last slice takes the rest), so that a simdgroup
// reads consecutive halves.
inline md_token_range md_slice_range(uint vocab, uint group, uint groups, uint tid, uint threads) {
  uint per = (vocab + groups - 1) / groups;
  per = (per + 31u) / 32u * 32u;
  md_token_range r;
  r.begin = min(vocab, group * per);
  r.end = min(vocab, r.begin + per);
  r.first = tid;
  r.stride = threads;
  return r;
}

// Step 0 for one stored value.
inline half md_sanitised(half h) {
  return as_type<half>(ushort(md_half_bits_of_key(md_key_of(h))));
}

// Which edits (steps 1-2) row `row` of a step gets: row r of a batch samples
// with history_count + r tokens of history.
struct md_edit_plan {
  uint history_start;
  uint history_end;
  bool penalties;
  bool masked;
  bool any;  // the row is read from the edited copy
};

inline md_edit_plan md_edit_plan_of(constant md_sampling_params& params, uint row) {
  md_edit_plan plan;
  plan.history_end = params.history_count + row;
  plan.history_start = plan.history_end > params.history_window ? plan.history_end - params.history_window : 0;
  plan.penalties = plan.history_end > plan.history_start &&
                   md_penalties_on(params.repeat_penalty, params.frequency_penalty, params.presence_penalty);
  plan.masked = (params.flags & MD_FLAG_TOKEN_MASK) != 0u;
  // The same test the host uses to leave the edit step out.
  plan.any = md_bias_or_penalties(params.bias_count, plan.history_end, params.history_window, params.repeat_penalty,
                                  params.frequency_penalty, params.presence_penalty) ||
             plan.masked;
  return plan;
}

// The first part of steps 1-2: a sanitised copy of the range into `edited`
// (-inf where the mask, when there is one, refuses the token), and its
// marks zeroed for md_apply_sparse_edits.
inline void md_copy_sanitised(device const half* input, device half* edited, device atomic_uint* marks,
                              device const uint* mask, bool masked, md_token_range r) {
  for (uint i = r.begin + r.first; i < r.end; i += r.stride) {
    edited[i] = masked && !md_mask_allows(mask[i >> 5], i) ? half(-INFINITY) : md_sanitised(input[i]);
    atomic_store_explicit(&marks[i], 0u, memory_order_relaxed);
  }
}

// The rest of steps 1-2 on the copy, by one threadgroup: the bias, then the
// penalties, each applied once per distinct token. Linear in the bias list
// and the window: `marks` (one uint per token, zero on entry) records
// which bias entry of a token comes first and how often a token is in the
// window, where a scan of the list per entry would be quadratic.
inline void md_apply_sparse_edits(device half* edited, device atomic_uint* marks, constant md_sampling_params& params,
                                  device const uint* history, md_edit_plan plan, device const md_bias_entry* bias,
                                  uint tid, uint threads) {
  const uint vocab = params.vocab_size;
  // A token listed twice keeps its first bias: the lowest entry j claims
  // it (the largest ~j), and only that entry's thread writes the logit.
  for (uint j = tid; j < params.bias_count; j += threads) {
    uint t = bias[j].token;
    if (t < vocab) atomic_fetch_max_explicit(&marks[t], ~j, memory_order_relaxed);
  }
  threadgroup_barrier(mem_flags::mem_device);
  for (uint j = tid; j < params.bias_count; j += threads) {
    uint t = bias[j].token;
    if (t < vocab && atomic_load_explicit(&marks[t], memory_order_relaxed) == ~j)
      edited[t] = md_round_half(float(edited[t]) + bias[j].value);
  }
  threadgroup_barrier(mem_flags::mem_device);
  if (!plan.penalties) return;
  for (uint j = tid; j < params.bias_count; j += threads) {
    uint t = bias[j].token;
    if (t < vocab) atomic_store_explicit(&marks[t], 0u, memory_order_relaxed);
  }
  threadgroup_barrier(mem_flags::mem_device);
  // Count each token of the window; then one thread per distinct token takes
  // the whole count (the exchange leaves 0 for the others) and applies it.
  for (uint j = plan.history_start + tid; j < plan.history_end; j += threads) {
    uint t = history[j];
    if (t < vocab) atomic_fetch_add_explicit(&marks[t], 1u, memory_order_relaxed);
  }
  threadgroup_barrier(mem_flags::mem_device);
  const float r = params.repeat_penalty;
  for (uint j = plan.history_start + tid; j < plan.history_end; j += threads) {
    uint t = history[j];
    if (t >= vocab) continue;
    const uint count = atomic_exchange_explicit(&marks[t], 0u, memory_order_relaxed);
    if (count == 0u) continue;  // another thread of the same token took it
    float z = float(edited[t]);
    float y = r == 1.0f ? z : (z > 0.0f ? z / r : z * r);
    float offset = float(count) * params.frequency_penalty + params.presence_penalty;
    edited[t] = md_round_half(y - offset);
  }
  threadgroup_barrier(mem_flags::mem_device);
}

// The largest key of the range and its first token (MD_KEY_NONE and
// MD_NO_TOKEN when the range is empty); with a mask, over the tokens it
// allows (the others count as -inf).
template <typename T>
inline md_best<int> md_range_top_key(device const T* row, md_token_range r) {
  md_best<int> top;
  top.value = MD_KEY_NONE;
  top.index = MD_NO_TOKEN;
  for (uint i = r.begin + r.first; i < r.end; i += r.stride) {
    int k = md_key_of(row[i]);
    if (k > top.value) {  // strictly greater: the first of ties is kept
      top.value = k;
      top.index = i;
    }
  }
  return top;
}

template <typename T>
inline md_best<int> md_range_top_allowed_key(device const T* row, device const uint* mask, md_token_range r) {
  md_best<int> top;
  top.value = MD_KEY_NONE;
  top.index = MD_NO_TOKEN;
  for (uint i = r.begin + r.first; i < r.end; i += r.stride) {
    int k = md_mask_allows(mask[i >> 5], i) ? md_key_of(row[i]) : md_key_of(T(-INFINITY));
    if (k > top.value) {
      top.value = k;
      top.index = i;
    }
  }
  return top;
}

// ---- the key histogram ------------------------------------------------------
// One bin per float16 key from MD_HALF_KEY_NEG_INF; counts are integers, so
// any number of threads and threadgroups adding them gives the same bins.

inline void md_zero_bins(device atomic_uint* bins, int low, int high, uint first, uint stride) {
  for (int k = low + int(first); k <= high; k += int(stride))
    atomic_store_explicit(&bins[k - MD_HALF_KEY_NEG_INF], 0u, memory_order_relaxed);
}

// Counts the range's keys >= low (the bins from low up must be zero).
inline void md_count_keys(device const half* row, md_token_range r, int low, device atomic_uint* bins) {
  for (uint i = r.begin + r.first; i < r.end; i += r.stride) {
    int k = md_key_of(row[i]);
    if (k >= low) atomic_fetch_add_explicit(&bins[k - MD_HALF_KEY_NEG_INF], 1u, memory_order_relaxed);
  }
}

inline uint md_bin_count(device atomic_uint* bins, int key) {
  return atomic_load_explicit(&bins[key - MD_HALF_KEY_NEG_INF], memory_order_relaxed);
}

// The bins [low, high] are split into one run per thread, the highest run
// to thread 0, so "from the top" is thread order.
struct md_bin_run {
  int top;   // first (highest) key of this thread's run
  uint length;
};

inline md_bin_run md_bin_run_of(int low, int high, uint tid, uint threads) {
  uint span = uint(high - low) + 1;
  md_bin_run run;
  run.length = (span + threads - 1) / threads;
  run.top = high - int(tid * run.length);
  return run;
}

// top-k: the largest key such that at least k tokens have keys >= it, the
// k-th largest value counted with ties. MD_HALF_KEY_NEG_INF when fewer than
// k tokens have keys >= low. Integer sums: the same for any thread count.
inline int md_top_k_key(device atomic_uint* bins, int low, int high, uint k, uint tid, uint threads, uint lane,
                        uint simd_index, threadgroup uint* scan, threadgroup int* result) {
  md_bin_run run = md_bin_run_of(low, high, tid, threads);
  uint count = 0;
  for (uint b = 0; b < run.length; ++b) {
    int key = run.top - int(b);
    if (key < low) break;
    count += md_bin_count(bins, key);
  }
  if (tid == 0) result[0] = MD_HALF_KEY_NEG_INF;
  uint total;
  uint before = md_threadgroup_exclusive_sum(count, lane, simd_index, threads / MD_SIMD_WIDTH, total, scan);
  if (before < k && before + count >= k) {  // integer sums: exactly one thread
    uint seen = before;
    for (uint b = 0; b < run.length; ++b) {
      int key = run.top - int(b);
      seen += md_bin_count(bins, key);
      if (seen >= k) {
        result[0] = key;
        break;
      }
    }
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  return result[0];
}

// ---- top-p's masses, in an order fixed by the keys --------------------------
// A value's mass is its count times its weight exp((z - m) / Tf). The keys
// are cut into blocks of MD_MASS_BLOCK_BINS from MD_HALF_KEY_NEG_INF, and
// blocks into groups of MD_MASS_GROUP_BLOCKS; each sum runs from the top key
// down, one thread per block or group, so the bits do not depend on how
// many threads there are. 992 blocks of 64 and 31 groups of 32: the walk
// that finds the threshold (one thread) is at most 31 + 32 + 64 steps.
#define MD_MASS_BLOCK_BINS 64
#define MD_MASS_BLOCKS (MD_HALF_KEY_BINS / MD_MASS_BLOCK_BINS)
#define MD_MASS_GROUP_BLOCKS 32
#define MD_MASS_GROUPS ((MD_MASS_BLOCKS + MD_MASS_GROUP_BLOCKS - 1) / MD_MASS_GROUP_BLOCKS)
#define MD_MASS_SLOTS (MD_MASS_BLOCKS + MD_MASS_GROUPS)  // threadgroup floats md_top_p_key needs

inline int md_mass_block(int key) {
  return (key - MD_HALF_KEY_NEG_INF) / MD_MASS_BLOCK_BINS;
}

// The keys of S_k in block b: [max(floor_key, bottom of b), min(high, top of b)].
struct md_key_span {
  int low;
  int high;
};

inline md_key_span md_block_span(int block, int floor_key, int high) {
  md_key_span s;
  s.low = max(floor_key, block * MD_MASS_BLOCK_BINS + MD_HALF_KEY_NEG_INF);
  s.high = min(high, block * MD_MASS_BLOCK_BINS + MD_HALF_KEY_NEG_INF + MD_MASS_BLOCK_BINS - 1);
  return s;
}

inline float md_key_mass(device atomic_uint* bins, int key, float max_value, float filter_t) {
  uint count = md_bin_count(bins, key);
  return count == 0 ? 0.0f : float(count) * md_exp((md_half_key_value(key) - max_value) / filter_t);
}

// top-p over S_k = keys >= floor_key: the largest key v such that the mass
// of keys >= v reaches p times the mass of S_k. The walk adds a whole
// group or block when that stays short of the target, else enters it; if
// rounding keeps it short to the end, all of S_k survives (floor_key).
inline int md_top_p_key(device atomic_uint* bins, int floor_key, int high, float max_value, float filter_t, float p,
                        uint tid, uint threads, threadgroup float* masses, threadgroup int* result) {
  const int top_block = md_mass_block(high);
  const uint blocks = uint(top_block - md_mass_block(floor_key)) + 1;
  const uint groups = (blocks + MD_MASS_GROUP_BLOCKS - 1) / MD_MASS_GROUP_BLOCKS;
  threadgroup float* group_masses = masses + MD_MASS_BLOCKS;
  for (uint j = tid; j < blocks; j += threads) {  // block j from the top
    md_key_span span = md_block_span(top_block - int(j), floor_key, high);
    float mass = 0.0f;
    for (int key = span.high; key >= span.low; --key) mass += md_key_mass(bins, key, max_value, filter_t);
    masses[j] = mass;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint g = tid; g < groups; g += threads) {
    float mass = 0.0f;
    for (uint j = g * MD_MASS_GROUP_BLOCKS; j < min(blocks, (g + 1) * MD_MASS_GROUP_BLOCKS); ++j) mass += masses[j];
    group_masses[g] = mass;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (tid == 0) {
    float total = 0.0f;
    for (uint g = 0; g < groups; ++g) total += group_masses[g];
    const float target = p * total;
    float seen = 0.0f;
    int found = floor_key;
    bool done = false;
    for (uint g = 0; g < groups && !done; ++g) {
      if (seen + group_masses[g] < target) {
        seen += group_masses[g];
        continue;
      }
      for (uint j = g * MD_MASS_GROUP_BLOCKS; j < min(blocks, (g + 1) * MD_MASS_GROUP_BLOCKS) && !done; ++j) {
        if (seen + masses[j] < target) {
          seen += masses[j];
          continue;
        }
        md_key_span span = md_block_span(top_block - int(j), floor_key, high);
        for (int key = span.high; key >= span.low; --key) {
          if (md_bin_count(bins, key) == 0) continue;
          seen += md_key_mass(bins, key, max_value, filter_t);
          if (seen >= target) {
            found = key;
            done = true;
            break;
          }
        }
      }
    }
    result[1] = found;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  return result[1];
}

// ---- step 5: the filters as one threshold key --------------------------------

// What step 5 needs from the row's top key: the filter temperature, the
// max value, min-p's key, which of top-k and top-p are on, and the lowest
// key the histogram must count (top-k alone needs only what min-p keeps;
// top-p weighs all of S_k).
struct md_filter_plan {
  float filter_t;
  float max_value;
  int min_p_key;
  bool top_k;
  bool top_p;
  int count_low;
};

inline md_filter_plan md_filter_plan_of(constant md_sampling_params& params, int top_key) {
  md_filter_plan plan;
  plan.filter_t = (params.flags & MD_FLAG_UNIT_FILTER_TEMPERATURE) != 0u ? 1.0f : params.temperature;
  plan.max_value = md_half_key_value(top_key);
  plan.min_p_key = MD_HALF_KEY_NEG_INF;
  if (params.min_p > 0.0f) plan.min_p_key = md_half_key_at_least(plan.max_value + plan.filter_t * md_log_any(params.min_p));
  plan.top_k = params.top_k > 0u && params.top_k < params.vocab_size;
  plan.top_p = params.top_p < 1.0f;
  plan.count_low = plan.top_p ? MD_HALF_KEY_NEG_INF : plan.min_p_key;
  return plan;
}

// Whether a sampled row needs the key histogram (top-k or top-p on).
inline bool md_needs_histogram(constant md_sampling_params& params) {
  return md_filters_need_histogram(params.temperature, params.top_k, params.top_p, params.vocab_size);
}

// tau, from bins that count every key >= plan.count_low up to top_key.
// Threadgroup scratch: count_scan MD_SCAN_SLOTS, masses MD_MASS_SLOTS,
// thresholds 2.
inline int md_filter_tau(constant md_sampling_params& params, md_filter_plan plan, int top_key, device atomic_uint* bins,
                         uint tid, uint threads, uint lane, uint simd_index, threadgroup uint* count_scan,
                         threadgroup float* masses, threadgroup int* thresholds) {
  int tau = plan.min_p_key;
  if (!plan.top_k && !plan.top_p) return tau;
  int k_key = MD_HALF_KEY_NEG_INF;
  if (plan.top_k)
    k_key = md_top_k_key(bins, plan.count_low, top_key, params.top_k, tid, threads, lane, simd_index, count_scan,
                         thresholds);
  tau = max(tau, k_key);
  if (plan.top_p)
    tau = max(tau, md_top_p_key(bins, k_key, top_key, plan.max_value, plan.filter_t, params.top_p, tid, threads,
                                masses, thresholds));
  return tau;
}

// ---- step 6: noise ----------------------------------------------------------

// Step 6's score of token `token` with key `key`: z + T * g. One
// expression for every kernel that scores, so each compiles it alike.
inline float md_noise_score(int key, float temperature, uint noise_key, uint token) {
  return md_half_key_value(key) + temperature * md_token_noise(noise_key, token);
}

// The lowest key step 6 must look at: tau, or higher where no noise can lift
// a token over the argmax's own score. g <= MD_GUMBEL_MAX, so a token below
// (the argmax's score - T * MD_GUMBEL_MAX), less a few ulps for rounding,
// cannot win: an exact shortcut.
inline int md_noise_floor_key(float temperature, uint noise_key, int top_key, uint top_index, int tau) {
  const float max_noise = temperature * MD_GUMBEL_MAX;
  const float argmax_score = md_noise_score(top_key, temperature, noise_key, top_index);
  float limit = argmax_score - max_noise;
  limit -= (fabs(argmax_score) + max_noise) * 9.5367431640625e-7f;  // 2^-20
  const int window = isinf(limit) || isnan(limit) ? MD_HALF_KEY_NEG_INF : md_half_key_at_least(limit);
  return max(window, tau);
}

// The range's best z + T * g over keys >= floor_key (-inf and MD_NO_TOKEN
// when it has none); ties keep the first token.
inline md_best<float> md_range_noise_best(device const half* row, md_token_range r, int floor_key, float temperature,
                                          uint noise_key) {
  md_best<float> best;
  best.value = -INFINITY;
  best.index = MD_NO_TOKEN;
  for (uint i = r.begin + r.first; i < r.end; i += r.stride) {
    int k = md_key_of(row[i]);
    if (k < floor_key) continue;
    float s = md_noise_score(k, temperature, noise_key, i);
    if (s > best.value) {
      best.value = s;
      best.index = i;
    }
  }
  return best;
}

#endif  // MD_SAMPLING_STEPS_H
