// How a forward pass's kernels grow when every launch serves g times the sequences: the
// under-batched finding's estimate of an iteration at a larger batch (docs/design.md, "Serving").
//
// Kernels other than the weight GEMMs (elementwise, norms, attention, KV-cache reads and writes,
// sampling) work per sequence or per token: their grids grow with the batch. A kernel runs in
// waves of the blocks its SMs hold at once (theoretical occupancy); its time is taken to grow with
// its number of waves, from one wave up. A batch-1 kernel far below one wave stays as it is until
// the grown grid fills the chip. This is an estimate: a kernel's first wave also carries its fixed
// launch latency, so the growth is on the high side for tiny kernels, and a kernel that is bound by
// memory bandwidth across waves can be slower still.
#pragma once

#include <vector>

#include "core/device_context.h"

namespace gpuscope {

struct BatchGrowth {
  double before_ns = 0;   // GPU time of the kernels grown, as traced.
  double after_ns = 0;    // Their time with g times the blocks (est.).
  double unknown_ns = 0;  // Kernels without a grid, block size or device limits: kept as they are.
  int64_t kernels = 0;    // How many were grown.
};

// Grows the window's kernels whose `skip` entry is false (skip is indexed like ctx.kernels) by
// `growth` (>= 1).
BatchGrowth grow_per_sequence_kernels(const DeviceContext& ctx, double growth, const std::vector<bool>& skip);

// The blocks of kernel k that the device holds at once (SMs x resident blocks per SM); 0 where
// unknown.
double blocks_per_wave(const Device* dev, const Kernel& k);

}  // namespace gpuscope
