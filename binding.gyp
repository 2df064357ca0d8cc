{
  "variables": {
    # -mfma lets the emulator's kernels (below) fuse where the build CPU can.
    "md_host_fma": "<!(node scripts/host-has-fma.mjs)"
  },
  "target_defaults": {
    "include_dirs": [
      "<!(node -p \"require('node-addon-api').include_dir\")",
      "native/emu",
      "metal"
    ],
    "defines": [
      "NAPI_VERSION=8",
      "NODE_ADDON_API_DISABLE_DEPRECATED",
      # Any C++ exception at the boundary (std::bad_alloc included) becomes
      # a JavaScript Error instead of aborting the process.
      "NODE_ADDON_API_CPP_EXCEPTIONS_ALL",
      # A worker thread terminated while it calls into the addon: throwing
      # into its ending environment fails, and node-addon-api would turn
      # that failure into a C++ exception nothing catches (std::terminate,
      # the whole process). Swallowed instead: nobody is left to tell.
      "NODE_API_SWALLOW_UNTHROWABLE_EXCEPTIONS"
    ],
    "cflags!": ["-fno-exceptions"],
    "cflags_cc!": ["-fno-exceptions", "-std=gnu++17", "-std=gnu++20"],
    "cflags_cc": ["-std=c++17", "-O3", "-fexceptions", "-ffp-contract=off", "-fno-trapping-math"],
    "xcode_settings": {
      "GCC_ENABLE_CPP_EXCEPTIONS": "YES",
      "CLANG_CXX_LANGUAGE_STANDARD": "c++17",
      "MACOSX_DEPLOYMENT_TARGET": "11.0",
      "OTHER_CPLUSPLUSFLAGS": ["-O3", "-ffp-contract=off", "-fno-trapping-math"]
    }
  },
  "targets": [
    {
      # The .metal kernels compiled as C++ for the emulated device, with
      # floating-point contraction on: only metal/md_exact_float.h keeps
      # them unfused, as on Metal, so what it misses fails the agreement
      # tests. (Apple clang ignores the pragma under =fast, so macOS uses
      # =on, which contracts within statements, as Metal does.)
      "target_name": "md_emulator_kernels",
      "type": "static_library",
      "sources": ["native/emu/kernels.cpp"],
      # C++ accepts any [[attribute]]; Metal does not: lint before building.
      "actions": [{
        "action_name": "lint_metal",
        "inputs": ["scripts/lint-metal.mjs", "metal/md_kernel.h", "metal/md_sampling.h", "metal/md_exact_float.h",
                   "metal/argmax.metal", "metal/sampling.metal", "metal/md_sampling_steps.h", "metal/sampling_wide.metal",
                   "metal/bigram.metal", "metal/probes.metal",
                   "metal/transformer_rows.metal", "metal/md_transformer.h", "metal/matvec.metal", "metal/md_matvec_rows.h", "metal/head_sampling.metal", "metal/md_blocks.h",
                       "metal/md_block_values.h", "metal/embedding.metal", "metal/attention.metal", "metal/matmul.metal", "metal/moe.metal"],
        "outputs": ["<(INTERMEDIATE_DIR)/lint-metal.stamp"],
        "action": ["node", "scripts/lint-metal.mjs", "--stamp", "<(INTERMEDIATE_DIR)/lint-metal.stamp"]
      }],
      "cflags_cc": ["-ffp-contract=fast"],
      "xcode_settings": {
        "OTHER_CPLUSPLUSFLAGS": ["-ffp-contract=on"]
      },
      "conditions": [
        ["md_host_fma=='yes'", { "cflags_cc": ["-mfma"] }]
      ]
    },
    {
      # The AVX2 dot kernels, the one file built for AVX2 (x86-64 only):
      # the library picks them at run time when the CPU has AVX2.
      "target_name": "md_dot_avx2",
      "type": "static_library",
      "sources": ["native/core/quant/dot_avx2.cpp"],
      "conditions": [
        ["target_arch=='x64'", {
          "cflags_cc": ["-mavx2", "-mfma", "-mf16c"],
          "xcode_settings": { "OTHER_CPLUSPLUSFLAGS": ["-mavx2", "-mfma", "-mf16c"] }
        }]
      ]
    },
    {
      # The same with AVX-VNNI (picked when CPUID has it).
      "target_name": "md_dot_avx_vnni",
      "type": "static_library",
      "sources": ["native/core/quant/dot_avx_vnni.cpp"],
      "conditions": [
        ["target_arch=='x64'", {
          "cflags_cc": ["-mavx2", "-mfma", "-mf16c", "-mavxvnni"],
          "xcode_settings": { "OTHER_CPLUSPLUSFLAGS": ["-mavx2", "-mfma", "-mf16c", "-mavxvnni"] }
        }]
      ]
    },
    {
      # And for AVX-512 VL/BW/VNNI (picked when the CPU has them).
      "target_name": "md_dot_avx512",
      "type": "static_library",
      "sources": ["native/core/quant/dot_avx512.cpp"],
      "conditions": [
        ["target_arch=='x64'", {
          "cflags_cc": ["-mavx2", "-mfma", "-mf16c", "-mavx512f", "-mavx512vl", "-mavx512bw", "-mavx512vnni"],
          "xcode_settings": { "OTHER_CPLUSPLUSFLAGS": ["-mavx2", "-mfma", "-mf16c", "-mavx512f", "-mavx512vl", "-mavx512bw", "-mavx512vnni"] }
        }]
      ]
    },
    {
      # And AMX for batched products (picked when the CPU and OS allow it).
      "target_name": "md_dot_amx",
      "type": "static_library",
      "sources": ["native/core/quant/dot_amx.cpp"],
      "conditions": [
        ["target_arch=='x64'", {
          "cflags_cc": ["-mavx2", "-mfma", "-mf16c", "-mavx512f", "-mavx512vl", "-mavx512bw", "-mavx512vnni", "-mamx-tile", "-mamx-int8"],
          "xcode_settings": { "OTHER_CPLUSPLUSFLAGS": ["-mavx2", "-mfma", "-mf16c", "-mavx512f", "-mavx512vl", "-mavx512bw", "-mavx512vnni", "-mamx-tile", "-mamx-int8"] }
        }]
      ]
    },
    {
      # The NEON tiles with the int8 matrix multiply (i8mm: Apple M2 and
      # later), built for it on arm64 and picked when the OS reports it.
      "target_name": "md_dot_neon_i8mm",
      "type": "static_library",
      "sources": ["native/core/quant/dot_neon_i8mm.cpp"],
      "conditions": [
        ["target_arch=='arm64'", {
          "cflags_cc": ["-march=armv8.2-a+dotprod+i8mm+fp16+fp16fml"],
          "xcode_settings": { "OTHER_CPLUSPLUSFLAGS": ["-march=armv8.2-a+dotprod+i8mm+fp16+fp16fml"] }
        }],
        ["target_arch=='arm64' and OS=='linux'", { "cflags_cc": ["-fno-schedule-insns"] }]
      ]
    },
    {
      # The NEON tables' F16 tile on fmlal (FEAT_FHM: every Apple silicon
      # chip), built for it on arm64 and picked when the OS reports it.
      "target_name": "md_dot_neon_fhm",
      "type": "static_library",
      "sources": ["native/core/quant/dot_neon_fhm.cpp"],
      "conditions": [
        ["target_arch=='arm64'", {
          "cflags_cc": ["-march=armv8.2-a+fp16+fp16fml"],
          "xcode_settings": { "OTHER_CPLUSPLUSFLAGS": ["-march=armv8.2-a+fp16+fp16fml"] }
        }],
        ["target_arch=='arm64' and OS=='linux'", { "cflags_cc": ["-fno-schedule-insns"] }]
      ]
    },
    {
      # The NEON tiles (every arm64 CPU). On Linux (GCC) without the
      # scheduling before register allocation, which spills their sums
      # (CMakeLists.txt says by how much); Apple's clang has no such pass.
      "target_name": "md_dot_neon",
      "type": "static_library",
      "sources": ["native/core/quant/dot_neon.cpp"],
      "conditions": [
        ["target_arch=='arm64' and OS=='linux'", { "cflags_cc": ["-fno-schedule-insns"] }]
      ]
    },
    {
      # Float weights' batches on a BLAS library: Accelerate on macOS, as
      # llama.cpp's Mac build. Elsewhere the file builds no library table.
      "target_name": "md_dot_blas",
      "type": "static_library",
      "sources": ["native/core/quant/dot_blas.cpp"],
      "conditions": [
        ["OS=='mac'", {
          "defines": ["MD_BLAS_ACCELERATE"],
          "link_settings": { "libraries": ["-framework Accelerate"] }
        }]
      ]
    },
    {
      "target_name": "metal_decode",
      "dependencies": ["md_emulator_kernels", "md_dot_avx2", "md_dot_avx_vnni", "md_dot_avx512", "md_dot_amx", "md_dot_neon_i8mm", "md_dot_neon", "md_dot_neon_fhm", "md_dot_blas"],
      "sources": [
        "native/core/cpu_sampler.cpp",
        "native/core/noise_block.cpp",
        "native/core/weight_bounds.cpp",
        "native/core/kernel_sampler.cpp",
        "native/core/sampling_launches.cpp",
        "native/core/dispatch_table.cpp",
        "native/core/bigram_forward.cpp",
        "native/core/exact_arithmetic.cpp",
        "native/core/simd_layout_probe.cpp",
        "native/core/kernel_usage.cpp",
        "native/core/kernel_contracts.cpp",
        "native/core/thread_pool.cpp",
        "native/core/mapped_file.cpp",
        "native/core/quant/tensor_types.cpp",
        "native/core/quant/convert_rows.cpp",
        "native/core/quant/dot.cpp",
        "native/core/quant/repack.cpp",
        "native/core/transformer/repack_weights.cpp",
        "native/core/quant/cpu_features.cpp",
        "native/core/quant/dot_portable.cpp",
        "native/core/graph/forward_graph.cpp",
        "native/core/graph/llama_graph.cpp",
        "native/core/graph/gemma3_graph.cpp",
        "native/core/graph/table_recorder.cpp",
        "native/core/transformer/weights.cpp",
        "native/core/transformer/ops.cpp",
        "native/core/transformer/matmul.cpp",
        "native/core/transformer/transformer.cpp",
        "native/core/transformer/head_pick.cpp",
        "native/core/transformer/cache_shift.cpp",
        "native/core/transformer/moe_ffn.cpp",
        "native/emu/fiber.cpp",
        "native/emu/threadgroup_runner.cpp",
        "native/emu/emulated_device.cpp",
        "native/emu/emulated_queue.cpp",
        "native/addon/addon.cpp",
        "native/addon/sampling_arguments.cpp",
        "native/addon/sample_binding.cpp",
        "native/addon/device_binding.cpp",
        "native/addon/device_open.cpp",
        "native/addon/buffer_binding.cpp",
        "native/addon/table_binding.cpp",
        "native/addon/model_binding.cpp",
        "native/addon/device_promise.cpp",
        "native/addon/job_thread.cpp",
        "native/addon/transformer_binding.cpp",
        "native/addon/model_arguments.cpp",
        "native/addon/graph_binding.cpp",
        "native/addon/sampling_launch_binding.cpp",
        "native/addon/bench_binding.cpp",
        "native/bench/llama_cpp_sampler.cpp"
      ],
      "conditions": [
        ["OS=='mac'", {
          "sources": ["native/metal/metal_device.mm"],
          "include_dirs": ["<(INTERMEDIATE_DIR)"],
          "actions": [{
            "action_name": "embed_kernels",
            "inputs": ["scripts/embed-kernels.mjs", "metal/md_kernel.h", "metal/md_sampling.h", "metal/md_exact_float.h",
                       "metal/argmax.metal", "metal/sampling.metal", "metal/md_sampling_steps.h", "metal/sampling_wide.metal",
                   "metal/bigram.metal", "metal/probes.metal",
                       "metal/transformer_rows.metal", "metal/md_transformer.h", "metal/matvec.metal", "metal/md_matvec_rows.h", "metal/head_sampling.metal", "metal/md_blocks.h",
                       "metal/md_block_values.h", "metal/embedding.metal", "metal/attention.metal", "metal/matmul.metal", "metal/moe.metal"],
            "outputs": ["<(INTERMEDIATE_DIR)/md_kernel_source.h"],
            "action": ["node", "scripts/embed-kernels.mjs", "<(INTERMEDIATE_DIR)/md_kernel_source.h"]
          }],
          "link_settings": {
            # CoreGraphics: without it a command-line process may get no
            # default Metal device (MTLCreateSystemDefaultDevice returns nil).
            "libraries": ["-framework Metal", "-framework Foundation", "-framework CoreGraphics"]
          },
          "xcode_settings": {
            "CLANG_ENABLE_OBJC_ARC": "YES",
            "OTHER_CFLAGS": ["-fobjc-arc"]
          }
        }, {
          "sources": ["native/metal/metal_device_stub.cpp"]
        }]
      ]
    }
  ]
}
