// libFuzzer target for the capture reader: any byte string must give a Trace or a Status,
// never a crash, hang or unbounded allocation (chunk sizes are capped in capture_format.h).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "formats/capture.h"
#include "formats/capture_format.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Half the inputs get a valid file header so the fuzzer spends its time in the chunks.
  std::string bytes(reinterpret_cast<const char*>(data), size);
  if (size > 0 && (data[0] & 1)) {
    std::string header(gpuscope::capture::kMagic, sizeof(gpuscope::capture::kMagic));
    header += std::string("\x01\0\0\0\0\0\0\0", 8);
    bytes = header + bytes.substr(1);
  }
  auto trace = gpuscope::read_capture_bytes(bytes, "fuzz");
  (void)trace;
  return 0;
}
