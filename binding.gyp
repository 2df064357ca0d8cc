{
  "targets": [
    {
      "target_name": "metal_decode",
      "sources": [
        "native/core/cpu_sampler.cpp",
        "native/core/noise_block.cpp",
        "native/core/kernel_sampler.cpp",
        "native/core/dispatch_table.cpp",
        "native/core/bigram_forward.cpp",
        "native/emu/fiber.cpp",
        "native/emu/threadgroup_runner.cpp",
        "native/emu/emulated_device.cpp",
        "native/emu/kernels.cpp",
        "native/addon/addon.cpp",
        "native/addon/sampling_arguments.cpp",
        "native/addon/sample_binding.cpp",
        "native/addon/device_binding.cpp",
        "native/addon/buffer_binding.cpp",
        "native/addon/table_binding.cpp",
        "native/addon/model_binding.cpp"
      ],
      "include_dirs": [
        "<!(node -p \"require('node-addon-api').include_dir\")",
        "native/emu",
        "metal"
      ],
      "defines": [
        "NAPI_VERSION=8",
        "NODE_ADDON_API_DISABLE_DEPRECATED"
      ],
      "cflags!": ["-fno-exceptions"],
      "cflags_cc!": ["-fno-exceptions", "-std=gnu++17", "-std=gnu++20"],
      "cflags_cc": ["-std=c++17", "-O3", "-fexceptions", "-ffp-contract=off", "-fno-trapping-math"],
      "xcode_settings": {
        "GCC_ENABLE_CPP_EXCEPTIONS": "YES",
        "CLANG_CXX_LANGUAGE_STANDARD": "c++17",
        "MACOSX_DEPLOYMENT_TARGET": "11.0",
        "OTHER_CPLUSPLUSFLAGS": ["-O3", "-ffp-contract=off", "-fno-trapping-math"]
      },
      "conditions": [
        ["OS=='mac'", {
          "sources": ["native/metal/metal_device.mm"],
          "include_dirs": ["<(INTERMEDIATE_DIR)"],
          "actions": [{
            "action_name": "embed_kernels",
            "inputs": ["scripts/embed-kernels.mjs", "metal/md_kernel.h", "metal/md_sampling.h",
                       "metal/argmax.metal", "metal/sampling.metal", "metal/bigram.metal"],
            "outputs": ["<(INTERMEDIATE_DIR)/md_kernel_source.h"],
            "action": ["node", "scripts/embed-kernels.mjs", "<(INTERMEDIATE_DIR)/md_kernel_source.h"]
          }],
          "link_settings": {
            "libraries": ["-framework Metal", "-framework Foundation"]
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
