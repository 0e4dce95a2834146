#include "render/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/core.h>

namespace gpuscope {
namespace {

bool same_file(const std::string& a, const std::string& b) {
  if (a == b) return true;
  struct stat sa {
  }, sb{};
  if (::stat(a.c_str(), &sa) != 0 || ::stat(b.c_str(), &sb) != 0) return false;
  return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

std::string why(int err) { return std::strerror(err); }

// What a special file is, for a message.
std::string_view kind_of(mode_t mode) {
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

Status write_all(int fd, std::string_view text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Status::error(why(n < 0 ? errno : EIO));
    done += static_cast<size_t>(n);
  }
  return ok_status();
}

}  // namespace

Status check_output_path(std::string_view option, const std::string& path, const std::vector<std::string>& inputs) {
  if (path.empty() || path == "-") {
    return Status::error(fmt::format("{} '{}': name a file to write to, e.g. {} out{}", option, path, option,
                                     option == "--html" ? ".html" : ".json"));
  }
  for (const std::string& input : inputs) {
    if (same_file(path, input)) {
      return Status::error(fmt::format("{} {}: that is an input of this command; name another file", option, path));
    }
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return ok_status();  // Nothing there (or a dangling link): created.
  if (S_ISDIR(st.st_mode)) {
    return Status::error(fmt::format("{} {}: is a directory; name a file in it, e.g. {}/out{}", option, path, path,
                                     option == "--html" ? ".html" : ".json"));
  }
  if (!S_ISREG(st.st_mode)) {
    return Status::error(fmt::format("{} {}: is {}, which would be replaced by a regular file; name a file", option,
                                     path, kind_of(st.st_mode)));
  }
  if ((st.st_mode & 0222) == 0 || ::access(path.c_str(), W_OK) != 0) {
    return Status::error(fmt::format("{} {}: is read-only; remove it first or name another file", option, path));
  }
  return ok_status();
}

Status write_output_file(std::string_view option, const std::string& path, const std::vector<std::string>& inputs,
                         const std::function<Status(int fd)>& fill) {
  if (Status checked = check_output_path(option, path, inputs); !checked.ok()) return checked;
  std::string tmp = path + ".tmp-XXXXXX";
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0) {
    return Status::error(
        fmt::format("{}: cannot create it ({}); check the directory exists and is writable", path, why(errno)));
  }
  // mkstemp makes the file 0600: keep the mode of the file replaced, else what fopen would make.
  struct stat old {};
  if (::stat(path.c_str(), &old) == 0) {
    ::fchmod(fd, old.st_mode & 07777);
  } else {
    const mode_t mask = ::umask(0);
    ::umask(mask);
    ::fchmod(fd, 0666 & ~mask);
  }
  Status filled = fill(fd);
  if (filled.ok() && ::fsync(fd) != 0) filled = Status::error(why(errno));
  if (::close(fd) != 0 && filled.ok()) filled = Status::error(why(errno));
  if (filled.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) filled = Status::error(why(errno));
  if (!filled.ok()) {
    ::unlink(tmp.c_str());
    return Status::error(
        fmt::format("{}: cannot write it ({}); check free disk space and permissions", path, filled.message()));
  }
  return ok_status();
}

Status write_output_file(std::string_view option, const std::string& path, const std::vector<std::string>& inputs,
                         std::string_view text) {
  return write_output_file(option, path, inputs, [text](int fd) { return write_all(fd, text); });
}

}  // namespace gpuscope
