// matvec_counts.cpp
#include "matvec_counts.h"

#include <cstring>
#include <string>
#include <vector>

#include "count_dispatch.h"
#include "md_transformer.h"
#include "random_weights.h"

namespace md::counters {

MatvecCounts countMatvec(Device& device, TensorType type, const char* kernelSuffix, uint32_t rows, uint32_t cols,
                         uint32_t simdgroups, uint32_t phase) {
  const std::vector<uint8_t> bytes = randomRows(type, rows, cols, rows + cols);
  auto w = device.newBuffer(phase + bytes.size());  // the matrix `phase` bytes in: its line phase
  std::memcpy(static_cast<uint8_t*>(w->contents()) + phase, bytes.data(), bytes.size());
  auto x = device.newBuffer(size_t(cols) * 4);
  auto* xs = static_cast<float*>(x->contents());
  for (uint32_t i = 0; i < cols; ++i) xs[i] = float(i % 7) - 3.0f;
  auto y = device.newBuffer(size_t(rows) * 4);
  const md_matvec_params p{cols, MD_MATVEC_STORE, {rows, 0, 0}, 1, MD_LINE_PHASES(phase, phase, phase), 0};
  const uint32_t simdGroupsNeeded = (rows + MD_MATVEC_ROWS - 1) / MD_MATVEC_ROWS;
  // The unused matrix slots bound to the first, as the tables bind them.
  return matrixCounts(countDispatch(device, std::string("md_matvec_") + kernelSuffix,
                                    {{0, w.get(), phase},
                                     {1, x.get()},
                                     {3, y.get()},
                                     {4, w.get(), phase},
                                     {5, y.get()},
                                     {6, w.get(), phase},
                                     {7, y.get()}},
                                    2, &p, sizeof p, (simdGroupsNeeded + simdgroups - 1) / simdgroups, 32 * simdgroups),
                      bytes.size());
}

}  // namespace md::counters
