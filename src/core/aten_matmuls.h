// The matmul records (trace.h, Matmul) of PyTorch (ATen) ops, from the input shapes the profiler
// recorded (record_shapes=True). PyTorch's op names and argument orders are known here and only
// here: the Kineto reader calls add_aten_matmuls for each op it reads (and the core's test
// builders do, as it would); everything after reads the records.
#pragma once

#include <span>

#include "core/trace.h"

namespace gpuscope {

// The dims of argument i of a host op with recorded shapes (empty when not recorded).
std::span<const int64_t> op_arg_shape(const Trace& trace, const HostEvent& op, size_t i);

// Appends the matrix products of `op` to trace.matmuls and points op at them, for the matmul
// family: aten::mm, addmm, bmm, baddbmm, matmul, linear (one product each) and scaled-dot-product
// attention forward (QK^T and PV, no causal discount, as the PaLM convention) and backward (the
// four products of its gradients: 2x forward). Adds nothing when the op is not in the family, or
// its shapes are missing, negative or overflow.
void add_aten_matmuls(Trace& trace, HostEvent& op);

}  // namespace gpuscope
