// The kernel mix: time by category, the top kernels, launch statistics and the precision of
// matrix work.
#pragma once

#include <vector>

#include "core/catalog.h"
#include "core/device_context.h"
#include "core/report.h"

namespace gpuscope {

// Per kernel of DeviceContext::kernels (same index): its category, and the precision of GEMM
// and attention kernels (kUnknown for the others).
struct KernelMix {
  std::vector<KernelCategory> categories;
  std::vector<Precision> precisions;
};

// Classifies the window's kernels and sets r.kernel_count, r.categories, r.top_kernels,
// r.launch and r.precision.
KernelMix add_kernel_mix(const DeviceContext& ctx, DeviceReport& r);

// A kernel's category: from its name, else optimizer when launched inside an optimizer step.
KernelCategory kernel_category(const DeviceContext& ctx, const Kernel& k);

// A matrix kernel's precision: tf32/fp8 from the name, else the dtype of the launching op's
// matmul records, else of its matrix arguments, else what the name says.
Precision kernel_precision(const DeviceContext& ctx, const Kernel& k);

}  // namespace gpuscope
