// gpuscope-fake-cuda-program: a "CUDA program" for the tests of `gpuscope run` on machines
// without a GPU. It does what the CUDA driver does in cuInit for the injection library: loads
// $CUDA_INJECTION64_PATH and calls its InitializeInjection (with gpuscope run's test setup,
// that is libgpuscope_inject_sim). Without the variable it runs untraced.
//
// Usage: gpuscope-fake-cuda-program [--sleep-ms N] [--exit N] [--signal N] [--print-env NAME]...
// (--signal N: the program kills itself with signal N at the end, as a crash would)
#include <dlfcn.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

int main(int argc, char** argv) {
  int sleep_ms = 0;
  int exit_code = 0;
  int signal_number = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--sleep-ms") == 0) {
      sleep_ms = std::atoi(argv[i + 1]);
    } else if (std::strcmp(argv[i], "--exit") == 0) {
      exit_code = std::atoi(argv[i + 1]);
    } else if (std::strcmp(argv[i], "--signal") == 0) {
      signal_number = std::atoi(argv[i + 1]);
    } else if (std::strcmp(argv[i], "--print-env") == 0) {
      const char* v = std::getenv(argv[i + 1]);
      std::printf("%s=%s\n", argv[i + 1], v ? v : "(unset)");
    } else {
      std::fprintf(stderr, "gpuscope-fake-cuda-program: unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  std::fflush(stdout);
  if (const char* lib = std::getenv("CUDA_INJECTION64_PATH"); lib && *lib) {
    void* handle = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      std::fprintf(stderr, "gpuscope-fake-cuda-program: %s\n", dlerror());
      return 3;
    }
    using InitFn = int (*)();
    auto init = reinterpret_cast<InitFn>(dlsym(handle, "InitializeInjection"));
    if (!init) {
      std::fprintf(stderr, "gpuscope-fake-cuda-program: no InitializeInjection in %s\n", lib);
      return 3;
    }
    init();
  }
  if (sleep_ms > 0) usleep(static_cast<useconds_t>(sleep_ms) * 1000);
  if (signal_number > 0) {
    signal(signal_number, SIG_DFL);
    raise(signal_number);
  }
  return exit_code;
}
