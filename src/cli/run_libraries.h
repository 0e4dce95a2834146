// Where `gpuscope run` finds what it puts into the traced program: the injection library, the
// cuBLAS interposer, gpuscope-calibrate, and the Python bootstrap folder; and the environment
// that hands them to the program.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace gpuscope::cli {

// The folder of the running gpuscope binary ("." if unknown).
std::string exe_dir();

// The folders searched, in order: $GPUSCOPE_LIB_DIR, beside the binary, ../lib,
// ../lib/gpuscope (`cmake --install`),
// ../cupti (the build tree: build/src/cli/gpuscope next to build/src/cupti).
std::vector<std::string> library_dirs();

// The first `name` (a file) in library_dirs(), resolved to an absolute path; empty if none.
std::string find_library(const std::string& name);

// The Python bootstrap folder, `python/` beside the libraries (first of library_dirs() that
// holds python/sitecustomize.py; built from src/python/gpuscope_boot); empty if none.
std::string find_python_bootstrap();

// What the traced program's environment gains for Python: GPUSCOPE_RUN=1 always; and, unless
// `python_env` (the value of GPUSCOPE_PYTHON, or null) is "0" or `bootstrap` is empty,
// PYTHONPATH = bootstrap, followed by `old_pythonpath` (the user's, kept, after a ':') when set
// and non-empty.
std::vector<std::pair<std::string, std::string>> python_environment(const std::string& bootstrap,
                                                                    const char* python_env,
                                                                    const char* old_pythonpath);

}  // namespace gpuscope::cli
