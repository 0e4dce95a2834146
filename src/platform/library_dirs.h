// Where gpuscope finds its private files (libgpuscope_inject.so, libgpuscope_blas.so,
// gpuscope-calibrate, python/, libgpuscope_k8s_grpc.so): folders named relative to the running
// binary, never to the current directory, so running gpuscope in an untrusted folder cannot
// make it load a library from there.
#pragma once

#include <string>
#include <vector>

namespace gpuscope::platform {

// The folder of the running binary, from /proc/self/exe ("." if unknown).
std::string exe_dir();

// The folders searched, in order: $GPUSCOPE_LIB_DIR (when set and non-empty), beside the
// binary, ../lib, ../lib/gpuscope (`cmake --install`'s layout, CMakeLists.txt), then the build
// tree's: ../cupti (build/src/cli/gpuscope next to build/src/cupti) and ../k8s (the
// pod-resources client module, build/src/k8s).
std::vector<std::string> library_dirs();

// The first `name` (a regular file) in library_dirs(), resolved to an absolute path; empty if
// none.
std::string find_library(const std::string& name);

}  // namespace gpuscope::platform
