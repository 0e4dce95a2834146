#include "cli/run_process.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace gpuscope::cli {

namespace {

constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH};

}  // namespace

ChildResult run_child(const ChildSpec& spec, void (*on_started)(void*), void* context) {
  ChildResult result;
  if (spec.argv.empty()) {
    result.exit_code = 2;
    result.error = "no command given";
    return result;
  }
  sigset_t wait_set, old_mask;
  sigemptyset(&wait_set);
  for (int sig : kForwarded) sigaddset(&wait_set, sig);
  sigaddset(&wait_set, SIGCHLD);
  pthread_sigmask(SIG_BLOCK, &wait_set, &old_mask);

  int exec_pipe[2];
  if (pipe2(exec_pipe, O_CLOEXEC) != 0) {
    pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
    result.exit_code = 126;
    result.error = std::string("cannot create a pipe: ") + std::strerror(errno);
    return result;
  }
  // Prepare argv before fork: the child only calls async-signal-safe functions besides setenv.
  std::vector<char*> argv;
  for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);

  // Redirections are opened before fork, so a bad path is the parent's error.
  int redirect[2] = {-1, -1};
  const std::string* paths[2] = {&spec.stdout_path, &spec.stderr_path};
  for (int i = 0; i < 2; ++i) {
    if (paths[i]->empty()) continue;
    redirect[i] = open(paths[i]->c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (redirect[i] < 0) {
      int err = errno;
      for (int fd : {exec_pipe[0], exec_pipe[1], redirect[0]})
        if (fd >= 0) close(fd);
      pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
      result.exit_code = 126;
      result.error = "cannot write '" + *paths[i] + "': " + std::strerror(err);
      return result;
    }
  }
  auto close_redirects = [&] {
    for (int fd : redirect)
      if (fd >= 0) close(fd);
  };

  pid_t pid = fork();
  if (pid < 0) {
    int err = errno;
    close(exec_pipe[0]);
    close(exec_pipe[1]);
    close_redirects();
    pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
    result.exit_code = 126;
    result.error = std::string("fork failed: ") + std::strerror(err);
    return result;
  }
  if (pid == 0) {
    close(exec_pipe[0]);
    if (redirect[0] >= 0)
      dup2(redirect[0], STDOUT_FILENO);
    else if (spec.stdout_to_stderr)
      dup2(STDERR_FILENO, STDOUT_FILENO);
    if (redirect[1] >= 0) dup2(redirect[1], STDERR_FILENO);
    for (const auto& [name, value] : spec.env) setenv(name.c_str(), value.c_str(), 1);
    for (const auto& name : spec.unset_env) unsetenv(name.c_str());
    sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    execvp(argv[0], argv.data());
    int err = errno;
    (void)!write(exec_pipe[1], &err, sizeof(err));
    _exit(err == ENOENT ? 127 : 126);
  }
  close(exec_pipe[1]);
  close_redirects();
  int exec_errno = 0;
  ssize_t n;
  do {
    n = read(exec_pipe[0], &exec_errno, sizeof(exec_errno));
  } while (n < 0 && errno == EINTR);
  close(exec_pipe[0]);
  if (n == static_cast<ssize_t>(sizeof(exec_errno))) {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
    result.exit_code = exec_errno == ENOENT ? 127 : 126;
    result.error = "cannot run '" + spec.argv[0] + "': " + std::strerror(exec_errno);
    return result;
  }

  if (on_started) on_started(context);

  for (;;) {
    siginfo_t info;
    int sig = sigwaitinfo(&wait_set, &info);
    if (sig < 0) continue;  // EINTR
    if (sig == SIGCHLD) {
      int status = 0;
      pid_t done = waitpid(pid, &status, WNOHANG);
      if (done != pid) continue;  // Another child of ours, or a stop/continue.
      if (WIFEXITED(status)) {
        result.exit_code = WEXITSTATUS(status);
      } else if (WIFSIGNALED(status)) {
        result.signal = WTERMSIG(status);
        result.exit_code = 128 + WTERMSIG(status);
      }
      break;
    }
    // A terminal's Ctrl-C / Ctrl-\ / resize reached the whole foreground group already.
    if (info.si_code == SI_KERNEL) continue;
    kill(pid, sig);
  }
  pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  return result;
}

}  // namespace gpuscope::cli
