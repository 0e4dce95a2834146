// A stand-in for libcupti.so.13 with no GPU behind it, for inject_detach_test: each CUPTI entry
// point libgpuscope_inject.so calls succeeds and is logged (name, argument, calling thread), and
// fake_cupti_api_callback() plays a CUDA API call's entry or exit to the subscriber, as the
// driver would on the program's thread. It proves the tracer's protocol with CUPTI (which call,
// on which thread, in which order); what real CUPTI does is measured on a GPU.
#include <cupti.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

namespace {

struct Call {
  std::string name;
  long arg;
  long tid;
};

std::mutex mutex;
std::vector<Call> calls;
CUpti_CallbackFunc subscriber_callback = nullptr;
void* subscriber_userdata = nullptr;
int subscriber_token = 0;

CUptiResult log(const char* name, long arg = 0) {
  std::lock_guard<std::mutex> lock(mutex);
  calls.push_back({name, arg, static_cast<long>(syscall(SYS_gettid))});
  return CUPTI_SUCCESS;
}

}  // namespace

extern "C" {

// --- CUPTI, as far as libgpuscope_inject.so uses it -----------------------------------------

CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind) { return log("cuptiActivityEnable", kind); }
CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind kind) { return log("cuptiActivityDisable", kind); }
CUptiResult CUPTIAPI cuptiActivityEnableDriverApi(CUpti_CallbackId cbid, uint8_t) {
  return log("cuptiActivityEnableDriverApi", cbid);
}
CUptiResult CUPTIAPI cuptiActivityEnableRuntimeApi(CUpti_CallbackId cbid, uint8_t) {
  return log("cuptiActivityEnableRuntimeApi", cbid);
}
CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t flag) { return log("cuptiActivityFlushAll", flag); }
CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t*, size_t, CUpti_Activity**) {
  return CUPTI_ERROR_MAX_LIMIT_REACHED;
}
CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext, uint32_t, size_t* dropped) {
  *dropped = 0;
  return log("cuptiActivityGetNumDroppedRecords");
}
CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc,
                                                    CUpti_BuffersCallbackCompleteFunc) {
  return log("cuptiActivityRegisterCallbacks");
}
CUptiResult CUPTIAPI cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc) {
  return log("cuptiActivityRegisterTimestampCallback");
}
CUptiResult CUPTIAPI cuptiActivitySetAttribute(CUpti_ActivityAttribute attr, size_t*, void*) {
  return log("cuptiActivitySetAttribute", attr);
}
CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback, void* userdata) {
  {
    std::lock_guard<std::mutex> lock(mutex);
    subscriber_callback = callback;
    subscriber_userdata = userdata;
  }
  *subscriber = reinterpret_cast<CUpti_SubscriberHandle>(&subscriber_token);
  return log("cuptiSubscribe");
}
CUptiResult CUPTIAPI cuptiUnsubscribe(CUpti_SubscriberHandle) {
  {
    std::lock_guard<std::mutex> lock(mutex);
    subscriber_callback = nullptr;
  }
  return log("cuptiUnsubscribe");
}
CUptiResult CUPTIAPI cuptiEnableDomain(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain domain) {
  return log("cuptiEnableDomain", domain);
}
CUptiResult CUPTIAPI cuptiFinalize(void) { return log("cuptiFinalize"); }
CUptiResult CUPTIAPI cuptiGetCallbackName(CUpti_CallbackDomain, uint32_t, const char** name) {
  *name = "fakeApi";
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult, const char** text) {
  *text = "fake CUPTI";
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiGetTimestamp(uint64_t* timestamp) {
  *timestamp = static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
  return CUPTI_SUCCESS;
}

// --- For the test --------------------------------------------------------------------------

int fake_cupti_calls(void) {
  std::lock_guard<std::mutex> lock(mutex);
  return static_cast<int>(calls.size());
}

// The i-th call: its name (copied into `name`), argument and thread; false past the end.
bool fake_cupti_call(int i, char* name, size_t size, long* arg, long* tid) {
  std::lock_guard<std::mutex> lock(mutex);
  if (i < 0 || i >= static_cast<int>(calls.size()) || size == 0) return false;
  std::snprintf(name, size, "%s", calls[i].name.c_str());
  *arg = calls[i].arg;
  *tid = calls[i].tid;
  return true;
}

// A CUDA API call's entry or exit in `domain`, on the calling thread, as the driver reports it
// to the subscriber (nothing while none is subscribed).
void fake_cupti_api_callback(int domain, int site) {
  CUpti_CallbackFunc callback;
  void* userdata;
  {
    std::lock_guard<std::mutex> lock(mutex);
    callback = subscriber_callback;
    userdata = subscriber_userdata;
  }
  if (!callback) return;
  CUpti_CallbackData data{};
  data.callbackSite = static_cast<CUpti_ApiCallbackSite>(site);
  data.functionName = "fakeApi";
  callback(userdata, static_cast<CUpti_CallbackDomain>(domain), 0, &data);
}

}  // extern "C"
