// The numeric precision of matrix math: of a kernel (from its name), of a matmul record's
// operands (from the reader), and the key of the device catalogue's peak FLOP/s.
#pragma once

#include <cstdint>

namespace gpuscope {

enum class Precision : uint8_t { kUnknown, kFp64, kFp32, kTf32, kBf16, kFp16, kFp8, kInt8 };
inline constexpr int kNumPrecisions = 8;

}  // namespace gpuscope
