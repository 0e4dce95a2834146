// The library search: GPUSCOPE_LIB_DIR first, then folders relative to the binary, never to
// the current directory.
#include "platform/library_dirs.h"

#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include <gtest/gtest.h>

namespace gpuscope::platform {
namespace {

std::string temp_dir() {
  std::string templ = ::testing::TempDir() + "/library-dirs-XXXXXX";
  EXPECT_NE(mkdtemp(templ.data()), nullptr);
  return templ;
}

TEST(LibraryDirs, AllAbsoluteAndRelativeToTheBinaryWithoutTheVariable) {
  unsetenv("GPUSCOPE_LIB_DIR");
  const auto dirs = library_dirs();
  ASSERT_FALSE(dirs.empty());
  EXPECT_EQ(dirs.front(), exe_dir());
  for (const auto& d : dirs) {
    ASSERT_FALSE(d.empty());
    EXPECT_EQ(d.front(), '/') << d;  // Never the current directory.
    EXPECT_EQ(d.rfind(exe_dir(), 0), 0u) << d;
  }
  setenv("GPUSCOPE_LIB_DIR", "", 1);
  EXPECT_EQ(library_dirs(), dirs) << "an empty GPUSCOPE_LIB_DIR is not the current directory";
  unsetenv("GPUSCOPE_LIB_DIR");
}

TEST(LibraryDirs, FindsTheFirstRegularFileFromGpuscopeLibDir) {
  const std::string dir = temp_dir();
  ASSERT_EQ(mkdir((dir + "/libnot_a_file.so").c_str(), 0700), 0);
  std::ofstream(dir + "/libgpuscope_test_lib.so") << "";
  setenv("GPUSCOPE_LIB_DIR", dir.c_str(), 1);
  EXPECT_EQ(library_dirs().front(), dir);
  char real[PATH_MAX];
  ASSERT_NE(realpath(dir.c_str(), real), nullptr);
  EXPECT_EQ(find_library("libgpuscope_test_lib.so"), std::string(real) + "/libgpuscope_test_lib.so");
  EXPECT_EQ(find_library("libnot_a_file.so"), "");
  EXPECT_EQ(find_library("libgpuscope_absent.so"), "");
  unsetenv("GPUSCOPE_LIB_DIR");
  std::system(("rm -rf '" + dir + "'").c_str());
}

}  // namespace
}  // namespace gpuscope::platform
