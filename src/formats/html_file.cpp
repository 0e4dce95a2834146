#include "formats/html_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace gpuscope {
namespace {

bool same_file(const std::string& a, const std::string& b) {
  if (a == b) return true;
  struct stat sa{}, sb{};
  if (::stat(a.c_str(), &sa) != 0 || ::stat(b.c_str(), &sb) != 0) return false;
  return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

std::string why(int err) { return std::strerror(err); }

}  // namespace

Status check_html_path(const std::string& path, const std::vector<std::string>& inputs) {
  if (path.empty() || path == "-") {
    return Status::error("--html " + path + ": name a file to write the page to, e.g. --html report.html");
  }
  for (const std::string& input : inputs) {
    if (same_file(path, input)) {
      return Status::error("--html " + path + ": that is an input of this command; name another file for the page");
    }
  }
  struct stat st{};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    return Status::error("--html " + path + ": is a directory; name a file, e.g. " + path + "/report.html");
  }
  return ok_status();
}

Status write_html_file(const std::string& path, std::string_view text, const std::vector<std::string>& inputs) {
  if (Status checked = check_html_path(path, inputs); !checked.ok()) return checked;
  std::string tmp = path + ".tmp-XXXXXX";
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0) {
    return Status::error(path + ": cannot create the page (" + why(errno) + "); check the directory exists and is writable");
  }
  // mkstemp makes the file 0600; a page is for sharing: 0666 less the umask, as fopen would.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(fd, 0666 & ~mask);
  size_t done = 0;
  int err = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      err = n < 0 ? errno : EIO;
      break;
    }
    done += static_cast<size_t>(n);
  }
  if (err == 0 && ::fsync(fd) != 0) err = errno;
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err == 0 && ::rename(tmp.c_str(), path.c_str()) != 0) err = errno;
  if (err != 0) {
    ::unlink(tmp.c_str());
    return Status::error(path + ": cannot write the page (" + why(err) + "); check free disk space and permissions");
  }
  return ok_status();
}

}  // namespace gpuscope
