#include "core/trace.h"

#include <gtest/gtest.h>

namespace gpuscope {
namespace {

TEST(StringTable, InternsOnceAndKeepsViewsStable) {
  StringTable t;
  EXPECT_EQ(t.intern(""), 0u);
  const StringId a = t.intern("aten::mm");
  for (int i = 0; i < 10000; ++i) t.intern("k" + std::to_string(i));  // Growth must not move strings.
  EXPECT_EQ(t.intern("aten::mm"), a);
  EXPECT_EQ(t.view(a), "aten::mm");
  EXPECT_EQ(t.size(), 10002u);
}

TEST(ClassifyApi, Classes) {
  EXPECT_EQ(classify_api("cudaLaunchKernel"), ApiClass::kLaunch);
  EXPECT_EQ(classify_api("cuLaunchKernelEx"), ApiClass::kLaunch);
  EXPECT_EQ(classify_api("cudaGraphLaunch"), ApiClass::kLaunch);
  EXPECT_EQ(classify_api("cudaStreamSynchronize"), ApiClass::kSync);
  EXPECT_EQ(classify_api("cudaDeviceSynchronize"), ApiClass::kSync);
  EXPECT_EQ(classify_api("cudaMemcpyAsync"), ApiClass::kMemcpy);
  EXPECT_EQ(classify_api("cudaMemsetAsync"), ApiClass::kMemcpy);
  EXPECT_EQ(classify_api("cudaMalloc"), ApiClass::kAlloc);
  EXPECT_EQ(classify_api("cudaFree"), ApiClass::kAlloc);
  EXPECT_EQ(classify_api("cuMemAlloc_v2"), ApiClass::kAlloc);
  EXPECT_EQ(classify_api("hipMalloc"), ApiClass::kAlloc);
  EXPECT_EQ(classify_api("cudaGetDevice"), ApiClass::kOther);
}

TEST(Trace, SortsParentsBeforeChildrenThatStartWithThem) {
  Trace t;
  t.host_events.push_back({10, 20, 1, 1, t.strings.intern("child")});
  t.host_events.push_back({10, 50, 1, 1, t.strings.intern("parent")});
  t.host_events.push_back({0, 5, 1, 1, t.strings.intern("first")});
  t.sort_events();
  EXPECT_EQ(t.strings.view(t.host_events[0].name), "first");
  EXPECT_EQ(t.strings.view(t.host_events[1].name), "parent");
  EXPECT_EQ(t.strings.view(t.host_events[2].name), "child");
}

}  // namespace
}  // namespace gpuscope
