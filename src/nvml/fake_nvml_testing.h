// Test helpers: point the fake NVML at a fixture and load it through the real loader.
#pragma once

#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <string_view>

namespace gpuscope::nvml::testing {

inline std::string source_dir() {
  const char* env = std::getenv("GPUSCOPE_SOURCE_DIR");
  return env ? env : GPUSCOPE_SOURCE_DIR;
}

inline std::string testdata(std::string_view name) { return source_dir() + "/testdata/nvml/" + std::string(name); }

// Uses `path` as the fake's fixture for the next nvmlInit.
inline void use_fixture(const std::string& path) { setenv("GPUSCOPE_FAKE_NVML_FIXTURE", path.c_str(), 1); }

// Writes `text` to a fresh temporary file and uses it as the fixture.
inline std::string use_fixture_text(std::string_view text) {
  char name[] = "/tmp/gpuscope_fixture_XXXXXX";
  int fd = mkstemp(name);
  if (fd >= 0) close(fd);
  std::ofstream(name) << text;
  use_fixture(name);
  return name;
}

}  // namespace gpuscope::nvml::testing
