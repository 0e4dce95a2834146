// How captures are created and appended to (CaptureWriter, as the injection library and
// `gpuscope run` use it): new files only, mode 0600, never through a symlink, never truncating
// what is there.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "capture/capture_writer.h"
#include "input/capture_reader.h"

namespace gpuscope::capture {
namespace {

class CaptureOpen : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string templ = ::testing::TempDir() + "/capture-open-XXXXXX";
    ASSERT_NE(mkdtemp(templ.data()), nullptr);
    dir_ = templ;
  }
  void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }
  static void write_text(const std::string& p, const std::string& text) { std::ofstream(p) << text; }
  static std::string read_text(const std::string& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  std::string dir_;
};

TEST_F(CaptureOpen, CreatesANewFileOfMode0600) {
  const mode_t old = umask(0);
  CaptureWriter w;
  std::string error;
  ASSERT_TRUE(w.open(path("a.gpuscope"), {}, &error)) << error;
  umask(old);
  struct stat st;
  ASSERT_EQ(stat(path("a.gpuscope").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_F(CaptureOpen, NeverTruncatesAnExistingFile) {
  write_text(path("a.gpuscope"), "precious");
  CaptureWriter w;
  std::string error;
  EXPECT_FALSE(w.open(path("a.gpuscope"), {}, &error));
  EXPECT_NE(error.find(path("a.gpuscope")), std::string::npos) << error;
  EXPECT_EQ(read_text(path("a.gpuscope")), "precious");
}

TEST_F(CaptureOpen, NeverFollowsASymlink) {
  write_text(path("victim"), "precious");
  ASSERT_EQ(symlink(path("victim").c_str(), path("a.gpuscope").c_str()), 0);
  ASSERT_EQ(symlink(path("nowhere").c_str(), path("dangling.gpuscope").c_str()), 0);
  CaptureWriter w, v;
  std::string error;
  EXPECT_FALSE(w.open(path("a.gpuscope"), {}, &error));
  EXPECT_FALSE(v.open(path("dangling.gpuscope"), {}, &error));
  EXPECT_EQ(read_text(path("victim")), "precious");
  EXPECT_NE(access(path("nowhere").c_str(), F_OK), 0) << "a dangling link's target was created";
}

TEST_F(CaptureOpen, ProcessCaptureMovesPastTakenNamesAndSymlinks) {
  write_text(path("victim"), "precious");
  write_text(path("cap.42.gpuscope"), "an exec'd image of pid 42");
  ASSERT_EQ(symlink(path("victim").c_str(), path("cap.42-2.gpuscope").c_str()), 0);
  CaptureWriter w;
  std::string created, error;
  ASSERT_TRUE(w.open_new_for_process(path("cap"), 42, {}, &created, &error)) << error;
  EXPECT_EQ(created, path("cap.42-3.gpuscope"));
  ProcessRecord p;
  p.pid = 42;
  w.add(p);
  w.close();
  EXPECT_EQ(read_text(path("victim")), "precious");
  EXPECT_EQ(read_text(path("cap.42.gpuscope")), "an exec'd image of pid 42");
  EXPECT_TRUE(read_capture_file(created).ok());

  CaptureWriter fresh;
  ASSERT_TRUE(fresh.open_new_for_process(path("cap"), 7, {}, &created, &error)) << error;
  EXPECT_EQ(created, path("cap.7.gpuscope"));
}

TEST_F(CaptureOpen, ProcessCaptureInAMissingFolderIsOneError) {
  CaptureWriter w;
  std::string created, error;
  EXPECT_FALSE(w.open_new_for_process(path("no/such/cap"), 1, {}, &created, &error));
  EXPECT_NE(error.find("no/such/cap.1.gpuscope"), std::string::npos) << error;
  EXPECT_TRUE(created.empty());
}

TEST_F(CaptureOpen, AppendRefusesSymlinksFifosAndFolders) {
  write_text(path("victim"), "precious");
  ASSERT_EQ(symlink(path("victim").c_str(), path("link.gpuscope").c_str()), 0);
  ASSERT_EQ(mkfifo(path("fifo.gpuscope").c_str(), 0600), 0);
  ASSERT_EQ(mkdir(path("dir.gpuscope").c_str(), 0700), 0);
  for (const char* name : {"link.gpuscope", "fifo.gpuscope", "dir.gpuscope"}) {
    CaptureWriter w;
    std::string error;
    EXPECT_FALSE(w.open_append(path(name), {}, &error)) << name;  // A FIFO must not block.
    EXPECT_NE(error.find(name), std::string::npos) << error;
  }
  EXPECT_EQ(read_text(path("victim")), "precious");
}

TEST_F(CaptureOpen, AppendsToACaptureItCreated) {
  {
    CaptureWriter w;
    std::string error;
    ASSERT_TRUE(w.open(path("a.gpuscope"), {}, &error)) << error;
  }
  CaptureWriter w;
  std::string error;
  ASSERT_TRUE(w.open_append(path("a.gpuscope"), {}, &error)) << error;
  w.add(TracingCost{1000, 3000});
  w.close();
  auto t = read_capture_file(path("a.gpuscope"));
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE(t->tracing_cost.has_value());
}

}  // namespace
}  // namespace gpuscope::capture
