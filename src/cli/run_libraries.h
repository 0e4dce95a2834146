// Where `gpuscope run` finds what it puts into the traced program: the injection library, the
// cuBLAS interposer, gpuscope-calibrate, and the Python bootstrap folder; and the environment
// that hands them to the program.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "platform/library_dirs.h"

namespace gpuscope::cli {

// The library search (exe_dir, library_dirs, find_library) is platform/library_dirs.h,
// shared with `serve`'s pod-resources client module.
using platform::exe_dir;
using platform::find_library;
using platform::library_dirs;

// The Python bootstrap folder, `python/` beside the libraries (first of library_dirs() that
// holds python/sitecustomize.py, resolved through symlinks like find_library; built from
// src/python/gpuscope_boot); empty if none.
std::string find_python_bootstrap();

// What the traced program's environment gains for Python: GPUSCOPE_RUN=1 always; and, unless
// `python_env` (the value of GPUSCOPE_PYTHON, or null) is "0" or `bootstrap` is empty,
// PYTHONPATH = bootstrap, followed by `old_pythonpath` (the user's, kept, after a ':') when set
// and non-empty.
std::vector<std::pair<std::string, std::string>> python_environment(const std::string& bootstrap,
                                                                    const char* python_env, const char* old_pythonpath);

}  // namespace gpuscope::cli
