// kernels.cpp: the .metal kernels compiled as C++ for the emulator, and
// their table. Only this file sees the compat header's macros (`device`,
// `kernel`, ...), so it includes everything else first.
//
// Built with floating-point contraction on (and FMA instructions where the
// CPU has them): only metal/md_exact_float.h keeps the kernels' arithmetic
// unfused, as on Metal, so an expression it does not cover disagrees with
// the CPU in the tests.
#include <cstring>
#include <tuple>

#include "kernel_binding.h"

#include "metal_compat.h"
#include "argmax.metal"
#include "sampling.metal"
#include "sampling_wide.metal"
#include "bigram.metal"
#include "probes.metal"
#include "transformer_rows.metal"
#include "matvec.metal"
#include "head_sampling.metal"
#include "embedding.metal"
#include "attention.metal"
#include "matmul.metal"
#include "moe.metal"

namespace md::emu {
namespace {

// Kernel names are the pipeline-cache keys on both devices; a test checks
// this table against every `kernel void` in metal/.
// Each weight type's kernels (the list in md_blocks.h).
#define MD_WEIGHT_TYPE_KERNELS(NAME, suffix, id, values, bytes)                                \
  MD_EMULATED_KERNEL(md_matvec_##suffix), MD_EMULATED_KERNEL(md_matvec_batch_##suffix),        \
      MD_EMULATED_KERNEL(md_head_sample_##suffix), MD_EMULATED_KERNEL(md_embed_rows_##suffix), \
      MD_EMULATED_KERNEL(md_matmul_##suffix), MD_EMULATED_KERNEL(md_matvec_id_##suffix),       \
      MD_EMULATED_KERNEL(md_matmul_id_##suffix),

const EmulatedKernel kKernels[] = {
    MD_WEIGHT_TYPES(MD_WEIGHT_TYPE_KERNELS) MD_EMULATED_KERNEL(md_argmax_f16),
    MD_EMULATED_KERNEL(md_argmax_f32),
    MD_EMULATED_KERNEL(md_argmax_slices_f16),
    MD_EMULATED_KERNEL(md_argmax_slices_f32),
    MD_EMULATED_KERNEL(md_argmax_pick_f16),
    MD_EMULATED_KERNEL(md_argmax_pick_f32),
    MD_EMULATED_KERNEL(md_sample_f16),
    MD_EMULATED_KERNEL(md_draft_probability_f16),
    MD_EMULATED_KERNEL(md_sample_wide_prepare_f16),
    MD_EMULATED_KERNEL(md_sample_wide_edit_f16),
    MD_EMULATED_KERNEL(md_sample_wide_count_f16),
    MD_EMULATED_KERNEL(md_sample_wide_filter_f16),
    MD_EMULATED_KERNEL(md_sample_wide_noise_f16),
    MD_EMULATED_KERNEL(md_sample_wide_pick_f16),
    MD_EMULATED_KERNEL(md_embed_f16),
    MD_EMULATED_KERNEL(md_lm_head_f16),
    MD_EMULATED_KERNEL(md_fp_contract_probe),
    MD_EMULATED_KERNEL(md_simd_layout_probe),
    MD_EMULATED_KERNEL(md_noise_cells),
    MD_EMULATED_KERNEL(md_exp_values),
    MD_EMULATED_KERNEL(md_rms_norm_f32),
    MD_EMULATED_KERNEL(md_swiglu_f32),
    MD_EMULATED_KERNEL(md_geglu_f32),
    MD_EMULATED_KERNEL(md_add_f32),
    MD_EMULATED_KERNEL(md_half_from_f32),
    MD_EMULATED_KERNEL(md_head_sample_pick),
    MD_EMULATED_KERNEL(md_rope_f32),
    MD_EMULATED_KERNEL(md_kv_store_f16),
    MD_EMULATED_KERNEL(md_kv_store_f32),
    MD_EMULATED_KERNEL(md_kv_store_q8_0),
    MD_EMULATED_KERNEL(md_attention_f16),
    MD_EMULATED_KERNEL(md_attention_f32),
    MD_EMULATED_KERNEL(md_attention_q8_0),
    MD_EMULATED_KERNEL(md_attention_merge_f32),
    MD_EMULATED_KERNEL(md_moe_route_f32),
    MD_EMULATED_KERNEL(md_moe_group_u32),
    MD_EMULATED_KERNEL(md_moe_sum_f32),
};

}  // namespace

const EmulatedKernel* findEmulatedKernel(const char* name) {
  for (const EmulatedKernel& k : kKernels)
    if (std::strcmp(k.name, name) == 0) return &k;
  return nullptr;
}

const EmulatedKernel* emulatedKernels(size_t* count) {
  *count = sizeof(kKernels) / sizeof(kKernels[0]);
  return kKernels;
}

}  // namespace md::emu
