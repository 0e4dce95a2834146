// Turns CUPTI activity records into capture records. Pure: no CUPTI calls, no I/O of its own
// (it writes into a CaptureWriter it is handed), so it is tested with hand-built records and no
// GPU (activity_decoder_test.cpp). The injection library runs it on its writer thread.
//
// Record versions follow the CUPTI 13 headers (cupti_activity.h): kernels are
// CUpti_ActivityKernel10, memcpy CUpti_ActivityMemcpy6, memset CUpti_ActivityMemset4, API calls
// CUpti_ActivityAPI, NVTX CUpti_ActivityMarker2, synchronization CUpti_ActivitySynchronization2,
// memory CUpti_ActivityMemory4, devices CUpti_ActivityDevice5. CUPTI only appends fields to a
// record version, and the kind decides the struct.
//
// Clock: CUPTI timestamps on Linux are CLOCK_REALTIME nanoseconds unless a timestamp callback
// says otherwise (cuptiActivityRegisterTimestampCallback docs); `clock_offset_ns` is added to
// every timestamp to land on the host CLOCK_REALTIME when they are not.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>

#include <cupti_activity.h>

#include "capture/capture_writer.h"

namespace gpuscope::cupti {

// Resolves a runtime (driver=false) or driver API callback id to its name, e.g.
// cuptiGetCallbackName in the injection library; may return nullptr.
using ApiNameFn = std::function<const char*(bool driver, uint32_t cbid)>;

struct DecoderStats {
  uint64_t decoded = 0;
  uint64_t unknown_kinds = 0;
  uint64_t unmatched_marker_ends = 0;
  // GPU work with zero timestamps (in flight when a bounded window enabled the activity kinds):
  // not written.
  uint64_t untimed = 0;
};

class ActivityDecoder {
 public:
  ActivityDecoder(capture::CaptureWriter& out, ApiNameFn api_name, int64_t clock_offset_ns = 0)
      : out_(out), api_name_(std::move(api_name)), clock_offset_ns_(clock_offset_ns) {}

  // Decodes one record. Records of kinds we do not use are counted and skipped.
  void decode(const CUpti_Activity& record);

  void set_clock_offset_ns(int64_t offset) { clock_offset_ns_ = offset; }
  const DecoderStats& stats() const { return stats_; }
  // NVTX ranges started and not yet ended (a range open at exit is never written).
  size_t open_ranges() const { return open_ranges_.size(); }

 private:
  int64_t ts(uint64_t cupti_ns) const { return static_cast<int64_t>(cupti_ns) + clock_offset_ns_; }
  uint32_t api_name_id(bool driver, uint32_t cbid);
  void untimed() { ++stats_.untimed; }
  void decode_kernel(const CUpti_ActivityKernel10& k);
  void decode_memcpy(const CUpti_ActivityMemcpy6& m);
  void decode_memset(const CUpti_ActivityMemset4& m);
  void decode_api(const CUpti_ActivityAPI& a, bool driver);
  void decode_marker(const CUpti_ActivityMarker2& m);
  void decode_sync(const CUpti_ActivitySynchronization2& s);
  void decode_memory(const CUpti_ActivityMemory4& m);
  void decode_device(const CUpti_ActivityDevice5& d);

  struct OpenRange {
    int64_t start_ns = 0;
    int32_t tid = 0;
    uint32_t name = 0;
    uint32_t domain = 0;
  };

  capture::CaptureWriter& out_;
  ApiNameFn api_name_;
  int64_t clock_offset_ns_ = 0;
  DecoderStats stats_;
  std::unordered_map<uint64_t, uint32_t> api_names_;     // (driver << 32 | cbid) -> string id.
  std::unordered_map<uint32_t, OpenRange> open_ranges_;  // Marker id -> start.
};

}  // namespace gpuscope::cupti
