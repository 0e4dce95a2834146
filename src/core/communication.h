// Communication on one device: how much of the window the GPU spends in collectives (NCCL/RCCL
// kernels), how much of that no other kernel hides (exposed), and each collective's bytes and
// bandwidth where the trace records sizes (docs/design.md, "Communication").
#pragma once

#include <optional>
#include <string_view>

#include "core/device_context.h"
#include "core/report.h"

namespace gpuscope {

// Sets r.communication when the window holds communication kernels. Needs r.window_ns.
void add_communication(const DeviceContext& ctx, DeviceReport& r);

// nccl-tests' bus-bandwidth factor for `op` over `ranks` ranks (2(n-1)/n all-reduce, (n-1)/n
// all-gather, reduce-scatter, all-to-all, 1 broadcast, reduce, send, recv); nullopt for an
// operation it does not define. Names as PyTorch writes them, with or without '_'.
std::optional<double> busbw_factor(std::string_view op, int64_t ranks);

// Bytes per element of a PyTorch dtype name as Kineto writes it ("Float", "BFloat16"), or
// nullopt when unknown.
std::optional<int> dtype_bytes(std::string_view dtype);

}  // namespace gpuscope
