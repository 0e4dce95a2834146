// Where `gpuscope run` finds the libraries and the Python bootstrap, and the environment it
// gives the traced program for Python.
#include "cli/run_libraries.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include <gtest/gtest.h>

namespace gpuscope::cli {
namespace {

using Env = std::vector<std::pair<std::string, std::string>>;

TEST(RunLibraries, PythonPathIsPrependedAndTheUsersKept) {
  EXPECT_EQ(python_environment("/b/python", nullptr, "/user/a:/user/b"),
            (Env{{"GPUSCOPE_RUN", "1"}, {"PYTHONPATH", "/b/python:/user/a:/user/b"}}));
  EXPECT_EQ(python_environment("/b/python", "1", nullptr), (Env{{"GPUSCOPE_RUN", "1"}, {"PYTHONPATH", "/b/python"}}));
  EXPECT_EQ(python_environment("/b/python", nullptr, ""), (Env{{"GPUSCOPE_RUN", "1"}, {"PYTHONPATH", "/b/python"}}));
}

TEST(RunLibraries, PythonOffOrMissingLeavesPythonPathAlone) {
  EXPECT_EQ(python_environment("/b/python", "0", "/user/a"), (Env{{"GPUSCOPE_RUN", "1"}}));
  EXPECT_EQ(python_environment("", nullptr, "/user/a"), (Env{{"GPUSCOPE_RUN", "1"}}));
}

TEST(RunLibraries, FoundInGpuscopeLibDirFirst) {
  std::string templ = ::testing::TempDir() + "/run-libraries-XXXXXX";
  ASSERT_NE(mkdtemp(templ.data()), nullptr);
  const std::string dir = templ;
  std::ofstream(dir + "/libgpuscope_inject.so") << "";
  setenv("GPUSCOPE_LIB_DIR", dir.c_str(), 1);
  char real[PATH_MAX];
  ASSERT_NE(realpath(dir.c_str(), real), nullptr);
  EXPECT_EQ(find_library("libgpuscope_inject.so"), std::string(real) + "/libgpuscope_inject.so");
  EXPECT_EQ(library_dirs().front(), dir);

  // A python/ folder without the bootstrap's sitecustomize.py is not it.
  ASSERT_EQ(mkdir((dir + "/python").c_str(), 0700), 0);
  const std::string found_without = find_python_bootstrap();
  EXPECT_NE(found_without, std::string(real) + "/python");
  std::ofstream(dir + "/python/sitecustomize.py") << "";
  EXPECT_EQ(find_python_bootstrap(), std::string(real) + "/python");
  unsetenv("GPUSCOPE_LIB_DIR");
  std::system(("rm -rf '" + dir + "'").c_str());
}

}  // namespace
}  // namespace gpuscope::cli
