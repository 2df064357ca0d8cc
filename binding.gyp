{
  "targets": [
    {
      "target_name": "metal_decode",
      "sources": [
        "native/core/cpu_sampler.cpp",
        "native/core/noise_block.cpp",
        "native/addon/addon.cpp",
        "native/addon/sample_binding.cpp"
      ],
      "include_dirs": [
        "<!(node -p \"require('node-addon-api').include_dir\")"
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
      }
    }
  ]
}
