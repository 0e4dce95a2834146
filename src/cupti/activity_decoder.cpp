#include "cupti/activity_decoder.h"

#include <string>

#include "core/trace.h"

namespace gpuscope::cupti {

namespace {

uint8_t copy_kind(uint8_t cupti_kind) {
  switch (cupti_kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA:
      return static_cast<uint8_t>(CopyKind::kHtoD);
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH:
      return static_cast<uint8_t>(CopyKind::kDtoH);
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA:
      return static_cast<uint8_t>(CopyKind::kDtoD);
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH:
      return static_cast<uint8_t>(CopyKind::kHtoH);
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP:
      return static_cast<uint8_t>(CopyKind::kPtoP);
    default:
      return static_cast<uint8_t>(CopyKind::kUnknown);
  }
}

uint8_t host_memory(uint8_t cupti_memory_kind) {
  switch (cupti_memory_kind) {
    case CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE:
      return static_cast<uint8_t>(HostMemory::kPageable);
    case CUPTI_ACTIVITY_MEMORY_KIND_PINNED:
      return static_cast<uint8_t>(HostMemory::kPinned);
    default:
      return static_cast<uint8_t>(HostMemory::kUnknown);
  }
}

std::optional<uint64_t> correlation(uint32_t id) {
  if (id == 0) return std::nullopt;  // CUPTI uses 0 for "no correlation".
  return id;
}

std::optional<uint32_t> graph(uint32_t graph_id) {
  if (graph_id == 0) return std::nullopt;
  return graph_id;
}

}  // namespace

uint32_t ActivityDecoder::api_name_id(bool driver, uint32_t cbid) {
  uint64_t key = (uint64_t{driver} << 32) | cbid;
  auto it = api_names_.find(key);
  if (it != api_names_.end()) return it->second;
  const char* name = api_name_ ? api_name_(driver, cbid) : nullptr;
  std::string text =
      name ? std::string(name) : std::string(driver ? "driver_api_" : "runtime_api_") + std::to_string(cbid);
  // cuptiGetCallbackName returns names with version suffixes ("cudaLaunchKernel_v7000"); the core
  // classifies by name, so keep the public name.
  if (auto pos = text.find("_v"); pos != std::string::npos && pos + 2 < text.size() &&
                                  text.find_first_not_of("0123456789", pos + 2) == std::string::npos) {
    text.resize(pos);
  }
  uint32_t id = out_.intern(text);
  api_names_.emplace(key, id);
  return id;
}

void ActivityDecoder::decode(const CUpti_Activity& record) {
  switch (record.kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      decode_kernel(reinterpret_cast<const CUpti_ActivityKernel10&>(record));
      break;
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      decode_memcpy(reinterpret_cast<const CUpti_ActivityMemcpy6&>(record));
      break;
    case CUPTI_ACTIVITY_KIND_MEMSET:
      decode_memset(reinterpret_cast<const CUpti_ActivityMemset4&>(record));
      break;
    case CUPTI_ACTIVITY_KIND_RUNTIME:
      decode_api(reinterpret_cast<const CUpti_ActivityAPI&>(record), false);
      break;
    case CUPTI_ACTIVITY_KIND_DRIVER:
      decode_api(reinterpret_cast<const CUpti_ActivityAPI&>(record), true);
      break;
    case CUPTI_ACTIVITY_KIND_MARKER:
      decode_marker(reinterpret_cast<const CUpti_ActivityMarker2&>(record));
      break;
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
      decode_sync(reinterpret_cast<const CUpti_ActivitySynchronization2&>(record));
      break;
    case CUPTI_ACTIVITY_KIND_MEMORY2:
      decode_memory(reinterpret_cast<const CUpti_ActivityMemory4&>(record));
      break;
    case CUPTI_ACTIVITY_KIND_DEVICE:
      decode_device(reinterpret_cast<const CUpti_ActivityDevice5&>(record));
      break;
    default:
      ++stats_.unknown_kinds;
      return;
  }
  ++stats_.decoded;
}

void ActivityDecoder::decode_kernel(const CUpti_ActivityKernel10& k) {
  if (k.start == 0 || k.end == 0) return untimed();
  capture::KernelRecord r;
  r.start_ns = ts(k.start);
  r.end_ns = ts(k.end);
  r.device = static_cast<int32_t>(k.deviceId);
  r.stream = static_cast<int32_t>(k.streamId);
  r.name = out_.intern(k.name ? k.name : "<unnamed kernel>");
  r.grid[0] = static_cast<uint32_t>(k.gridX);
  r.grid[1] = static_cast<uint32_t>(k.gridY);
  r.grid[2] = static_cast<uint32_t>(k.gridZ);
  r.block[0] = static_cast<uint32_t>(k.blockX);
  r.block[1] = static_cast<uint32_t>(k.blockY);
  r.block[2] = static_cast<uint32_t>(k.blockZ);
  r.registers_per_thread = k.registersPerThread;
  r.shared_memory_bytes = k.staticSharedMemory + k.dynamicSharedMemory;
  r.correlation = correlation(k.correlationId);
  r.graph_id = graph(k.graphId);
  out_.add(r);
}

void ActivityDecoder::decode_memcpy(const CUpti_ActivityMemcpy6& m) {
  if (m.start == 0 || m.end == 0) return untimed();
  capture::MemcpyRecord r;
  r.start_ns = ts(m.start);
  r.end_ns = ts(m.end);
  r.device = static_cast<int32_t>(m.deviceId);
  r.stream = static_cast<int32_t>(m.streamId);
  r.copy_kind = copy_kind(m.copyKind);
  // The host side of the copy decides pinned vs pageable.
  if (m.copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_HTOD) r.host_memory = host_memory(m.srcKind);
  if (m.copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_DTOH) r.host_memory = host_memory(m.dstKind);
  r.bytes = m.bytes;
  r.correlation = correlation(m.correlationId);
  r.graph_id = graph(m.graphId);
  out_.add(r);
}

void ActivityDecoder::decode_memset(const CUpti_ActivityMemset4& m) {
  if (m.start == 0 || m.end == 0) return untimed();
  capture::MemsetRecord r;
  r.start_ns = ts(m.start);
  r.end_ns = ts(m.end);
  r.device = static_cast<int32_t>(m.deviceId);
  r.stream = static_cast<int32_t>(m.streamId);
  r.bytes = m.bytes;
  r.correlation = correlation(m.correlationId);
  r.graph_id = graph(m.graphId);
  out_.add(r);
}

void ActivityDecoder::decode_api(const CUpti_ActivityAPI& a, bool driver) {
  capture::ApiCallRecord r;
  r.start_ns = ts(a.start);
  r.end_ns = ts(a.end);
  r.tid = static_cast<int32_t>(a.threadId);
  r.name = api_name_id(driver, a.cbid);
  r.driver = driver;
  r.correlation = correlation(a.correlationId);
  out_.add(r);
}

// NVTX push/pop and start/end arrive as a START record (with the name) and an END record with
// the same id; marks as one INSTANTANEOUS record.
void ActivityDecoder::decode_marker(const CUpti_ActivityMarker2& m) {
  const bool on_thread = m.objectKind == CUPTI_ACTIVITY_OBJECT_THREAD || m.objectKind == CUPTI_ACTIVITY_OBJECT_PROCESS;
  const int32_t tid = on_thread ? static_cast<int32_t>(m.objectId.pt.threadId) : 0;
  if (m.flags & CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS) {
    capture::RangeRecord r;
    r.start_ns = r.end_ns = ts(m.timestamp);
    r.tid = tid;
    r.name = out_.intern(m.name ? m.name : "");
    r.domain = m.domain ? out_.intern(m.domain) : 0;
    out_.add(r);
    return;
  }
  if (m.flags & CUPTI_ACTIVITY_FLAG_MARKER_START) {
    OpenRange open;
    open.start_ns = ts(m.timestamp);
    open.tid = tid;
    open.name = out_.intern(m.name ? m.name : "");
    open.domain = m.domain ? out_.intern(m.domain) : 0;
    open_ranges_[m.id] = open;
    return;
  }
  if (m.flags & CUPTI_ACTIVITY_FLAG_MARKER_END) {
    auto it = open_ranges_.find(m.id);
    if (it == open_ranges_.end()) {
      ++stats_.unmatched_marker_ends;
      return;
    }
    capture::RangeRecord r;
    r.start_ns = it->second.start_ns;
    r.end_ns = ts(m.timestamp);
    r.tid = it->second.tid;
    r.name = it->second.name;
    r.domain = it->second.domain;
    open_ranges_.erase(it);
    out_.add(r);
  }
}

void ActivityDecoder::decode_sync(const CUpti_ActivitySynchronization2& s) {
  capture::SyncRecord r;
  r.start_ns = ts(s.start);
  r.end_ns = ts(s.end);
  r.type = static_cast<uint8_t>(s.type);
  if (s.streamId != CUPTI_SYNCHRONIZATION_INVALID_VALUE) r.stream = static_cast<int32_t>(s.streamId);
  r.correlation = correlation(s.correlationId);
  out_.add(r);
}

void ActivityDecoder::decode_memory(const CUpti_ActivityMemory4& m) {
  capture::MemoryRecord r;
  r.time_ns = ts(m.timestamp);
  r.device = static_cast<int32_t>(m.deviceId);
  r.is_free = m.memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;
  r.memory_kind = static_cast<uint8_t>(m.memoryKind);
  r.address = m.address;
  r.bytes = m.bytes;
  r.correlation = correlation(m.correlationId);
  out_.add(r);
}

void ActivityDecoder::decode_device(const CUpti_ActivityDevice5& d) {
  capture::DeviceRecord r;
  r.id = static_cast<int32_t>(d.id);
  r.name = d.name ? d.name : "";
  r.num_sms = static_cast<int32_t>(d.numMultiprocessors);
  r.cc_major = static_cast<int32_t>(d.computeCapabilityMajor);
  r.cc_minor = static_cast<int32_t>(d.computeCapabilityMinor);
  r.memory_bytes = d.globalMemorySize;
  r.max_threads_per_sm = static_cast<int32_t>(d.maxWarpsPerMultiprocessor * d.numThreadsPerWarp);
  r.regs_per_sm = static_cast<int32_t>(d.maxRegistersPerMultiprocessor);
  r.shared_mem_per_sm_bytes = static_cast<int32_t>(d.maxSharedMemoryPerMultiprocessor);
  out_.add(r);
}

}  // namespace gpuscope::cupti
