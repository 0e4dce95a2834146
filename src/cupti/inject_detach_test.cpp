// What libgpuscope_inject.so does with CUPTI after a bounded window, against a fake libcupti
// (fake_cupti.cpp) loaded in its place. By default CUPTI stays attached with every kind off, and
// the tracer's threads make no CUPTI call after it (a detach, cuptiFinalize, killed traced
// programs on a GPU: inject.cpp). With GPUSCOPE_DETACH=1 the detach is asked for by the writer
// thread and done at the exit of the program's next CUDA runtime call, on the program's thread,
// subscriber first, exactly once; never at a driver call's exit (often nested in a runtime call),
// and no CUPTI call from the tracer's own threads once it is asked for.
//
// The library's tracer is one per process: ctest runs each test in a process of its own (run
// by hand, the binary skips all but the first).
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace fs = std::filesystem;

struct Call {
  std::string name;
  long arg;
  long tid;
};

// CUPTI's values (cupti_callbacks.h), spelled here so the test needs no CUPTI header.
constexpr int kDriverApi = 1, kRuntimeApi = 2, kEnter = 0, kExit = 1;

struct Fake {
  int (*count)();
  bool (*call)(int, char*, size_t, long*, long*);
  void (*api_callback)(int, int);

  std::vector<Call> calls() const {
    std::vector<Call> out;
    char name[128];
    long arg = 0, tid = 0;
    for (int i = 0; call(i, name, sizeof name, &arg, &tid); ++i) out.push_back({name, arg, tid});
    return out;
  }
  int index_of(const std::string& name, long arg = -1) const {
    const std::vector<Call> c = calls();
    for (size_t i = 0; i < c.size(); ++i)
      if (c[i].name == name && (arg < 0 || c[i].arg == arg)) return static_cast<int>(i);
    return -1;
  }
  int count_of(const std::string& name) const {
    int n = 0;
    for (const Call& c : calls()) n += c.name == name;
    return n;
  }
};

template <typename F>
F symbol(void* handle, const char* name) {
  void* s = dlsym(handle, name);
  if (!s) ADD_FAILURE() << "no symbol " << name << ": " << dlerror();
  return reinterpret_cast<F>(s);
}

// The fake CUPTI and the injection library loaded with GPUSCOPE_DETACH as given (null: unset),
// a bounded window opened and closed; the library's entry points and the fake's log.
struct Traced {
  fs::path dir;
  Fake fake{};
  long program = 0;  // This, the program's, thread.
};

bool load_and_trace_a_window(const char* detach, Traced* t) {
  static bool loaded = false;  // One tracer per process.
  if (loaded) return false;
  loaded = true;
  t->dir = fs::temp_directory_path() / ("gpuscope-detach-" + std::to_string(getpid()));
  fs::create_directories(t->dir);
  setenv("GPUSCOPE_CAPTURE_PREFIX", (t->dir / "t").c_str(), 1);
  setenv("GPUSCOPE_TRACE_DEFERRED", "1", 1);
  if (detach) {
    setenv("GPUSCOPE_DETACH", detach, 1);
  } else {
    unsetenv("GPUSCOPE_DETACH");
  }
  // The fake first, under CUPTI's soname: the injection library's libcupti.so.13 is then it.
  void* cupti = dlopen(GPUSCOPE_FAKE_CUPTI, RTLD_NOW | RTLD_GLOBAL);
  EXPECT_NE(cupti, nullptr) << dlerror();
  void* inject = dlopen(GPUSCOPE_INJECT_LIB, RTLD_NOW | RTLD_LOCAL);
  EXPECT_NE(inject, nullptr) << dlerror();
  if (!cupti || !inject) return true;
  t->fake = Fake{symbol<int (*)()>(cupti, "fake_cupti_calls"),
                 symbol<bool (*)(int, char*, size_t, long*, long*)>(cupti, "fake_cupti_call"),
                 symbol<void (*)(int, int)>(cupti, "fake_cupti_api_callback")};
  auto initialize = symbol<int (*)()>(inject, "InitializeInjection");
  auto control = symbol<int (*)(int)>(inject, "gpuscope_trace_control");
  t->program = syscall(SYS_gettid);
  EXPECT_TRUE(t->fake.count && initialize && control);
  if (!t->fake.count || !initialize || !control) return true;
  EXPECT_EQ(initialize(), 1);
  EXPECT_EQ(control(1), 1);  // the window opens (on this, the program's, thread)
  EXPECT_GE(t->fake.index_of("cuptiActivityEnable"), 0);
  EXPECT_EQ(control(0), 1);  // ... and the writer thread closes it
  return true;
}

TEST(InjectDetach, CuptiStaysAttachedWithEveryKindOffByDefault) {
  Traced t;
  if (!load_and_trace_a_window(nullptr, &t)) GTEST_SKIP() << "one tracer per process: run this test alone";
  const Fake& fake = t.fake;
  ASSERT_TRUE(fake.count);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (fake.index_of("cuptiActivityDisable") < 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_GE(fake.index_of("cuptiActivityDisable"), 0) << "the window never closed";
  // The close's last flush, then nothing: the writer thread (which flushes CUPTI every second
  // while tracing) makes no CUPTI call, and a runtime call's exit detaches nothing.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const int settled = fake.count();
  fake.api_callback(kRuntimeApi, kExit);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  EXPECT_EQ(fake.count(), settled);
  EXPECT_EQ(fake.count_of("cuptiFinalize"), 0);
  EXPECT_EQ(fake.index_of("cuptiEnableDomain", kRuntimeApi), -1);
  fs::remove_all(t.dir);
}

TEST(InjectDetach, CuptiDetachesAtTheNextRuntimeCallsExitOnTheProgramsThreadWhenAsked) {
  Traced t;
  if (!load_and_trace_a_window("1", &t)) GTEST_SKIP() << "one tracer per process: run this test alone";
  const Fake& fake = t.fake;
  ASSERT_TRUE(fake.count);
  const long program = t.program;

  // The writer thread turns every kind off and asks for the detach: runtime calls' callbacks.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (fake.index_of("cuptiEnableDomain", kRuntimeApi) < 0 && fake.count_of("cuptiFinalize") == 0 &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_EQ(fake.count_of("cuptiFinalize"), 0) << "detached from the writer thread";
  const int asked = fake.index_of("cuptiEnableDomain", kRuntimeApi);
  ASSERT_GE(asked, 0) << "no detach asked for; CUPTI calls: " << [&] {
    std::string all;
    for (const Call& c : fake.calls()) all += c.name + "(" + std::to_string(c.arg) + ") ";
    return all;
  }();
  EXPECT_EQ(fake.index_of("cuptiEnableDomain", kDriverApi), -1);
  EXPECT_GE(fake.index_of("cuptiActivityDisable"), 0);
  EXPECT_LT(fake.index_of("cuptiActivityDisable"), asked);

  // A driver call's exit (nested in a runtime call) and a runtime call's entry do not detach.
  fake.api_callback(kDriverApi, kExit);
  fake.api_callback(kRuntimeApi, kEnter);
  EXPECT_EQ(fake.count_of("cuptiFinalize"), 0);

  // A runtime call's exit does: on this thread, the subscriber removed first.
  fake.api_callback(kRuntimeApi, kExit);
  const int unsubscribed = fake.index_of("cuptiUnsubscribe");
  const int finalized = fake.index_of("cuptiFinalize");
  ASSERT_GE(finalized, 0);
  ASSERT_GE(unsubscribed, 0);
  EXPECT_LT(unsubscribed, finalized);
  const std::vector<Call> calls = fake.calls();
  EXPECT_EQ(calls[finalized].tid, program);
  EXPECT_EQ(calls[unsubscribed].tid, program);

  // Once: the next runtime call finds CUPTI detached. And the writer thread, which flushes CUPTI
  // every second while tracing, makes no CUPTI call once the detach is asked for.
  fake.api_callback(kRuntimeApi, kExit);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  EXPECT_EQ(fake.count_of("cuptiFinalize"), 1);
  const std::vector<Call> after = fake.calls();
  for (size_t i = static_cast<size_t>(asked) + 1; i < after.size(); ++i)
    EXPECT_EQ(after[i].tid, program) << after[i].name << " from another thread after the detach was asked for";
  fs::remove_all(t.dir);
}

}  // namespace
