// The CUPTI record decoder on hand-built activity records (CUPTI 13 headers, no GPU, no
// libcupti call), checked through the capture reader: CUPTI record -> capture -> Trace.
#include "cupti/activity_decoder.h"
#include "core/steps.h"

#include <unistd.h>

#include <cstring>
#include <string>

#include <cupti_driver_cbid.h>
#include <cupti_runtime_cbid.h>
#include <gtest/gtest.h>

#include "input/capture_reader.h"

namespace gpuscope::cupti {
namespace {

class DecoderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = ::testing::TempDir() + "/decoder." + std::to_string(getpid()) + "." +
            ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::string error;
    ASSERT_TRUE(writer_.open(path_, {}, &error)) << error;
  }
  Trace finish() {
    writer_.close();
    auto t = read_capture_file(path_);
    EXPECT_TRUE(t.ok()) << t.status().message();
    return std::move(t).value();
  }
  static const char* api_name(bool driver, uint32_t cbid) {
    if (!driver && cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000) return "cudaLaunchKernel_v7000";
    if (!driver && cbid == CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020) return "cudaMalloc_v3020";
    if (driver && cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel) return "cuLaunchKernel";
    return nullptr;
  }
  std::string path_;
  capture::CaptureWriter writer_;
};

CUpti_ActivityKernel10 kernel(uint64_t start, uint64_t end, const char* name) {
  CUpti_ActivityKernel10 k;
  std::memset(&k, 0, sizeof(k));
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = start;
  k.end = end;
  k.deviceId = 0;
  k.streamId = 13;
  k.gridX = 264;
  k.gridY = 2;
  k.gridZ = 1;
  k.blockX = 128;
  k.blockY = 1;
  k.blockZ = 1;
  k.registersPerThread = 90;
  k.staticSharedMemory = 1024;
  k.dynamicSharedMemory = 65536;
  k.correlationId = 77;
  k.name = name;
  return k;
}

const CUpti_Activity& as_activity(const void* record) { return *static_cast<const CUpti_Activity*>(record); }

TEST_F(DecoderTest, KernelFieldsAndGraphKernels) {
  ActivityDecoder d(writer_, api_name);
  auto k = kernel(1'000, 3'000, "void gemm_kernel<128>(float*)");
  d.decode(as_activity(&k));
  auto g = kernel(5'000, 6'000, "graph_node_kernel");
  g.graphId = 9;
  g.graphNodeId = 1234;
  g.correlationId = 0;  // Graph kernels correlate to the graph launch; 0 means none.
  d.decode(as_activity(&g));
  EXPECT_EQ(d.stats().decoded, 2u);
  Trace t = finish();
  ASSERT_EQ(t.kernels.size(), 2u);
  const Kernel& a = t.kernels[0];
  EXPECT_EQ(a.start_ns, 1'000);
  EXPECT_EQ(a.end_ns, 3'000);
  EXPECT_EQ(a.stream, 13);
  EXPECT_EQ(t.strings.view(a.name), "void gemm_kernel<128>(float*)");
  EXPECT_EQ(a.grid.x, 264u);
  EXPECT_EQ(a.grid.y, 2u);
  EXPECT_EQ(a.block.x, 128u);
  EXPECT_EQ(a.registers_per_thread, 90);
  EXPECT_EQ(a.shared_memory_bytes, 1024 + 65536);
  EXPECT_EQ(a.correlation, 77u);
  EXPECT_EQ(t.strings.view(t.kernels[1].name), "graph_node_kernel");
  EXPECT_FALSE(t.kernels[1].correlation.has_value());
}

// Work in flight when a bounded window enabled the activity kinds comes with zero timestamps
// (seen on the H200 in windows of CUDA-graph programs): it is not written, or the report's
// start-up would span the whole clock.
TEST_F(DecoderTest, UntimedGpuWorkIsNotWritten) {
  ActivityDecoder d(writer_, api_name);
  auto timed = kernel(1'000, 3'000, "timed");
  auto untimed = kernel(0, 0, "untimed");
  d.decode(as_activity(&untimed));
  d.decode(as_activity(&timed));
  EXPECT_EQ(d.stats().untimed, 1u);
  Trace t = finish();
  ASSERT_EQ(t.kernels.size(), 1u);
  EXPECT_EQ(t.strings.view(t.kernels[0].name), "timed");
}

TEST_F(DecoderTest, ClockOffsetIsApplied) {
  ActivityDecoder d(writer_, api_name, /*clock_offset_ns=*/-500);
  auto k = kernel(1'000, 3'000, "k");
  d.decode(as_activity(&k));
  Trace t = finish();
  ASSERT_EQ(t.kernels.size(), 1u);
  EXPECT_EQ(t.kernels[0].start_ns, 500);
  EXPECT_EQ(t.kernels[0].end_ns, 2'500);
}

TEST_F(DecoderTest, MemcpyKindsAndHostMemory) {
  ActivityDecoder d(writer_, api_name);
  CUpti_ActivityMemcpy6 m;
  std::memset(&m, 0, sizeof(m));
  m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
  m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  m.bytes = 1 << 20;
  m.start = 100;
  m.end = 900;
  m.streamId = 7;
  m.correlationId = 5;
  d.decode(as_activity(&m));
  m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
  m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
  m.start = 1000;
  m.end = 1100;
  d.decode(as_activity(&m));
  m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOD;
  m.start = 2000;
  m.end = 2100;
  d.decode(as_activity(&m));
  Trace t = finish();
  ASSERT_EQ(t.memcpys.size(), 3u);
  EXPECT_EQ(t.memcpys[0].kind, CopyKind::kHtoD);
  EXPECT_EQ(t.memcpys[0].host_memory, HostMemory::kPageable);
  EXPECT_EQ(t.memcpys[0].bytes, 1u << 20);
  EXPECT_EQ(t.memcpys[0].correlation, 5u);
  EXPECT_EQ(t.memcpys[1].kind, CopyKind::kDtoH);
  EXPECT_EQ(t.memcpys[1].host_memory, HostMemory::kPinned);
  EXPECT_EQ(t.memcpys[2].kind, CopyKind::kDtoD);
  EXPECT_EQ(t.memcpys[2].host_memory, HostMemory::kUnknown);
}

TEST_F(DecoderTest, MemsetAndApiCalls) {
  ActivityDecoder d(writer_, api_name);
  CUpti_ActivityMemset4 s;
  std::memset(&s, 0, sizeof(s));
  s.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  s.bytes = 4096;
  s.start = 10;
  s.end = 20;
  d.decode(as_activity(&s));
  CUpti_ActivityAPI a;
  std::memset(&a, 0, sizeof(a));
  a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
  a.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
  a.start = 1;
  a.end = 5;
  a.threadId = 4321;
  a.correlationId = 77;
  d.decode(as_activity(&a));
  a.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020;
  a.start = 30;
  a.end = 60;
  d.decode(as_activity(&a));
  a.kind = CUPTI_ACTIVITY_KIND_DRIVER;
  a.cbid = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel;
  a.start = 70;
  a.end = 80;
  d.decode(as_activity(&a));
  a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
  a.cbid = 999999;  // A name the resolver does not know.
  a.start = 90;
  a.end = 95;
  d.decode(as_activity(&a));
  Trace t = finish();
  ASSERT_EQ(t.memsets.size(), 1u);
  EXPECT_EQ(t.memsets[0].bytes, 4096u);
  ASSERT_EQ(t.api_calls.size(), 4u);
  EXPECT_EQ(t.strings.view(t.api_calls[0].name), "cudaLaunchKernel");  // Version suffix dropped.
  EXPECT_EQ(t.api_calls[0].api_class, ApiClass::kLaunch);
  EXPECT_EQ(t.api_calls[0].tid, 4321);
  EXPECT_FALSE(t.api_calls[0].driver);
  EXPECT_EQ(t.strings.view(t.api_calls[1].name), "cudaMalloc");
  EXPECT_EQ(t.api_calls[1].api_class, ApiClass::kAlloc);
  EXPECT_EQ(t.strings.view(t.api_calls[2].name), "cuLaunchKernel");
  EXPECT_TRUE(t.api_calls[2].driver);
  EXPECT_EQ(t.api_calls[2].api_class, ApiClass::kLaunch);
  EXPECT_EQ(t.strings.view(t.api_calls[3].name), "runtime_api_999999");
}

CUpti_ActivityMarker2 marker(uint32_t flags, uint32_t id, uint64_t ts, const char* name, uint32_t tid = 11) {
  CUpti_ActivityMarker2 m;
  std::memset(&m, 0, sizeof(m));
  m.kind = CUPTI_ACTIVITY_KIND_MARKER;
  m.flags = static_cast<CUpti_ActivityFlag>(flags);
  m.id = id;
  m.timestamp = ts;
  m.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
  m.objectId.pt.processId = 1;
  m.objectId.pt.threadId = tid;
  m.name = name;
  return m;
}

TEST_F(DecoderTest, NvtxRangesPairByIdAndBecomeSteps) {
  ActivityDecoder d(writer_, api_name);
  // Two nested ranges interleaved with a mark; END records carry no name.
  auto s1 = marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 1, 1'000, "train_step");
  auto s2 = marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 2, 1'100, "forward");
  auto mk = marker(CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS, 3, 1'150, "checkpoint");
  auto e2 = marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 2, 1'500, nullptr);
  auto e1 = marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 1, 2'000, nullptr);
  auto s3 = marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 4, 2'000, "train_step");
  auto e3 = marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 4, 3'000, nullptr);
  auto orphan = marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 99, 3'500, nullptr);
  auto open = marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 5, 3'600, "train_step");
  for (auto* m : {&s1, &s2, &mk, &e2, &e1, &s3, &e3, &orphan, &open}) d.decode(as_activity(m));
  EXPECT_EQ(d.stats().unmatched_marker_ends, 1u);
  EXPECT_EQ(d.open_ranges(), 1u);
  Trace t = finish();
  ASSERT_EQ(t.host_events.size(), 4u);
  for (const auto& e : t.host_events) {
    EXPECT_EQ(e.kind, HostEventKind::kAnnotation);
    EXPECT_EQ(e.tid, 11);
  }
  EXPECT_EQ(t.strings.view(t.host_events[0].name), "train_step");
  EXPECT_EQ(t.host_events[0].end_ns, 2'000);
  EXPECT_EQ(t.strings.view(t.host_events[1].name), "forward");
  EXPECT_EQ(t.host_events[1].start_ns, 1'100);
  EXPECT_EQ(t.host_events[1].end_ns, 1'500);
  EXPECT_EQ(t.strings.view(t.host_events[2].name), "checkpoint");
  EXPECT_EQ(t.host_events[2].start_ns, t.host_events[2].end_ns);
  const StepDetection steps = detect_steps(t, "");
  EXPECT_EQ(steps.source, StepSource::kNvtxRange);
  ASSERT_EQ(steps.steps.size(), 2u);
  EXPECT_EQ(steps.steps[0].start_ns, 1'000);
  EXPECT_EQ(steps.steps[1].end_ns, 3'000);
}

TEST_F(DecoderTest, DeviceRecordAndUnknownKinds) {
  ActivityDecoder d(writer_, api_name);
  CUpti_ActivityDevice5 dev;
  std::memset(&dev, 0, sizeof(dev));
  dev.kind = CUPTI_ACTIVITY_KIND_DEVICE;
  dev.id = 0;
  dev.name = "NVIDIA H200";
  dev.numMultiprocessors = 132;
  dev.computeCapabilityMajor = 9;
  dev.computeCapabilityMinor = 0;
  dev.globalMemorySize = 150ull << 30;
  dev.maxWarpsPerMultiprocessor = 64;
  dev.numThreadsPerWarp = 32;
  dev.maxRegistersPerMultiprocessor = 65536;
  dev.maxSharedMemoryPerMultiprocessor = 233472;
  d.decode(as_activity(&dev));
  CUpti_Activity other;
  other.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
  d.decode(other);
  EXPECT_EQ(d.stats().unknown_kinds, 1u);
  Trace t = finish();
  ASSERT_EQ(t.devices.size(), 1u);
  EXPECT_EQ(t.devices[0].name, "NVIDIA H200");
  EXPECT_EQ(t.devices[0].num_sms, 132);
  EXPECT_EQ(t.devices[0].max_threads_per_sm, 2048);
  EXPECT_EQ(t.devices[0].regs_per_sm, 65536);
  EXPECT_EQ(t.devices[0].cc_major, 9);
}

TEST_F(DecoderTest, SyncAndMemoryRecordsDecodeWithoutTraceEvents) {
  ActivityDecoder d(writer_, api_name);
  CUpti_ActivitySynchronization2 s;
  std::memset(&s, 0, sizeof(s));
  s.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
  s.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
  s.start = 10;
  s.end = 50;
  s.streamId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
  d.decode(as_activity(&s));
  CUpti_ActivityMemory4 m;
  std::memset(&m, 0, sizeof(m));
  m.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
  m.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
  m.bytes = 1 << 30;
  d.decode(as_activity(&m));
  EXPECT_EQ(d.stats().decoded, 2u);
  Trace t = finish();
  EXPECT_TRUE(t.kernels.empty());
}

}  // namespace
}  // namespace gpuscope::cupti
