// `gpuscope top`: a live terminal view. One row per GPU with utilization beside SM active,
// tensor and DRAM activity, memory and power; processes below; waste signals highlighted.
//
// On a terminal: alternate screen, cursor home and overwrite each line (erase to end of line,
// then erase below), so nothing is cleared between frames and nothing flickers; stdin in
// non-canonical mode so a single 'q' quits; works over ssh (plain VT100 sequences only).
// Not a terminal: plain text blocks, one per interval. NO_COLOR (any value) turns colour off.
// Text from other users (command lines, user names, GPU names) goes through terminal_safe:
// their control characters are shown escaped, never sent to the terminal.
#include <poll.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>

#include <fmt/core.h>

#include "cli/command.h"
#include "cli/live_common.h"

namespace gpuscope::cli {
namespace {

struct TopOptions {
  LiveCliOptions live;
  int count = 0;  // Frames to draw, 0 = until q / Ctrl-C.
};

std::string pct(const std::optional<double>& v) { return v ? fmt::format("{:.1f}%", *v) : "-"; }

std::string gib(const std::optional<uint64_t>& v) {
  return v ? fmt::format("{:.1f}", static_cast<double>(*v) / (1024.0 * 1024 * 1024)) : "-";
}

struct Line {
  std::string text;
  enum Style { kPlain, kHeader, kAlert } style = kPlain;
};

std::vector<Line> render(const nvml::Sampler& sampler, const nvml::LiveSnapshot& snap,
                         const std::vector<Signal>& signals, int64_t interval_ns) {
  std::vector<Line> lines;
  char when[32];
  std::time_t now = std::time(nullptr);
  std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", std::localtime(&now));
  lines.push_back({fmt::format("gpuscope top  {} GPU(s)  driver {}  every {:.1f} s  {}  (q quits)",
                               sampler.devices().size(), terminal_safe(sampler.driver_version()),
                               interval_ns / 1e9, when),
                   Line::kHeader});
  lines.push_back({fmt::format("{:>6} {:<22} {:>7} {:>7} {:>6} {:>7} {:>6} {:>15} {:>7} {:>5}",
                               "GPU", "NAME", "UTIL", "SM ACT", "OCC", "TENSOR", "DRAM",
                               "MEM GiB", "POWER", "TEMP"),
                   Line::kHeader});
  for (size_t i = 0; i < snap.devices.size(); ++i) {
    const DeviceSample& s = snap.devices[i];
    const nvml::DeviceInfo& d = sampler.devices()[i];
    bool alert = false;
    for (const Signal& sig : signals) {
      alert |= sig.device == s.device && sig.gpu_instance_id == s.gpu_instance_id;
    }
    std::string id = d.gpu_instance_id ? fmt::format("{}/{}", d.index, *d.gpu_instance_id)
                                       : fmt::format("{}", d.index);
    std::string mem = s.memory_total_bytes
                          ? fmt::format("{}/{}", gib(s.memory_used_bytes), gib(s.memory_total_bytes))
                          : gib(s.memory_used_bytes);
    lines.push_back({fmt::format("{:>6} {:<22.22} {:>7} {:>7} {:>6} {:>7} {:>6} {:>15} {:>7} {:>5}",
                                 id, terminal_safe(d.name), pct(s.gpu_util_pct), pct(s.sm_active_pct),
                                 pct(s.sm_occupancy_pct), pct(s.tensor_active_pct),
                                 pct(s.dram_bw_pct), mem,
                                 s.power_w ? fmt::format("{:.0f} W", *s.power_w) : "-",
                                 s.temperature_c ? fmt::format("{:.0f}C", *s.temperature_c) : "-"),
                     alert ? Line::kAlert : Line::kPlain});
  }
  lines.push_back({"", Line::kPlain});
  lines.push_back({fmt::format("{:>6} {:>8} {:<10} {:>9} {:>6}  {:<28} {}", "GPU", "PID", "USER",
                               "MEM GiB", "SM%", "POD / JOB", "COMMAND"),
                   Line::kHeader});
  if (snap.processes.empty()) lines.push_back({"       (no compute processes)", Line::kPlain});
  for (const ProcessSample& p : snap.processes) {
    lines.push_back({fmt::format("{:>6} {:>8} {:<10.10} {:>9} {:>6}  {:<28.28} {}", p.device, p.pid,
                                 p.user.empty() ? "?" : terminal_safe(p.user), gib(p.memory_used_bytes),
                                 p.sm_util_pct ? fmt::format("{:.0f}", *p.sm_util_pct) : "-",
                                 terminal_safe(job_of(p)), p.command.empty() ? "?" : terminal_safe(p.command)),
                     Line::kPlain});
  }
  lines.push_back({"", Line::kPlain});
  if (signals.empty()) {
    lines.push_back({"no waste signals", Line::kPlain});
  } else {
    lines.push_back({"WASTE SIGNALS", Line::kHeader});
    for (const Signal& sig : signals) lines.push_back({describe_signal(sig), Line::kAlert});
  }
  return lines;
}

class Terminal {
 public:
  explicit Terminal(bool interactive) : interactive_(interactive) {
    if (!interactive_) return;
    if (isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &saved_) == 0) {
      termios raw = saved_;
      raw.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO);
      raw.c_cc[VMIN] = 0;
      raw.c_cc[VTIME] = 0;
      restore_termios_ = tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
    }
    std::fputs("\x1b[?1049h\x1b[?25l", stdout);  // Alternate screen, hide cursor.
    std::fflush(stdout);
  }
  ~Terminal() { restore(); }
  // Back to the normal screen and line mode; idempotent.
  void restore() {
    if (!interactive_) return;
    interactive_ = false;
    std::fputs("\x1b[?25h\x1b[?1049l", stdout);
    std::fflush(stdout);
    if (restore_termios_) tcsetattr(STDIN_FILENO, TCSANOW, &saved_);
  }
  int width() const {
    winsize ws{};
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
    return 200;
  }
  // True if 'q' was pressed since the last call; never blocks.
  bool quit_pressed() {
    if (!restore_termios_) return false;  // No keyboard (stdin not a terminal).
    pollfd pfd{STDIN_FILENO, POLLIN, 0};
    while (poll(&pfd, 1, 0) > 0) {
      char c = 0;
      if (read(STDIN_FILENO, &c, 1) != 1) return false;
      if (c == 'q' || c == 'Q') return true;
    }
    return false;
  }

 private:
  bool interactive_;
  termios saved_{};
  bool restore_termios_ = false;
};

int run_top(const TopOptions& o) {
  auto settings = live_settings(o.live);
  if (!settings) return 2;
  auto sampler = open_sampler_or_report();
  if (!sampler) return 2;
  install_interrupt_handlers();
  const bool tty = isatty(STDOUT_FILENO) != 0;
  const char* no_color = std::getenv("NO_COLOR");
  const bool color = tty && !(no_color && *no_color);
  Terminal term(tty);
  // The first frame after a short wait (GPM needs >= 100 ms), then every interval.
  settings->loop.should_stop = [&term] { return g_interrupted.load() || term.quit_pressed(); };
  nvml::LiveLoop loop(*sampler, settings->loop);
  int rc = 0;
  loop.run([&](const nvml::LiveFrame& frame) {
    if (!frame.status.ok()) {
      term.restore();
      fmt::print(stderr, "gpuscope: {}\n", frame.status.message());
      rc = 2;
      return false;
    }
    std::vector<Line> lines = render(*sampler, *frame.snapshot, *frame.signals, settings->interval_ns);
    for (const std::string& w : frame.warnings) lines.push_back({"warning: " + terminal_safe(w), Line::kAlert});
    std::string out;
    if (tty) {
      const size_t width = static_cast<size_t>(term.width());
      out += "\x1b[H";
      for (Line& l : lines) {
        if (l.text.size() >= width) l.text = std::string(nvml::truncate_utf8(l.text, width - 1));
        if (color && l.style == Line::kHeader) out += "\x1b[1m" + l.text + "\x1b[0m";
        else if (color && l.style == Line::kAlert) out += "\x1b[1;31m" + l.text + "\x1b[0m";
        else if (!color && l.style == Line::kAlert) out += "! " + l.text;
        else out += l.text;
        out += "\x1b[K\n";  // Erase the rest of the previous frame's line.
      }
      out += "\x1b[J";  // Erase below the last line.
    } else {
      for (const Line& l : lines) out += (l.style == Line::kAlert ? "! " : "") + l.text + "\n";
      out += "\n";
    }
    std::fwrite(out.data(), 1, out.size(), stdout);
    std::fflush(stdout);
    return o.count == 0 || frame.index + 1 < o.count;
  });
  return rc;
}

const CommandRegistration kTop{CommandSpec{
    "top", "Live view of every GPU and process: utilization beside SM and tensor activity, waste signals",
    30, [](CLI::App& app) -> std::function<int()> {
      auto o = std::make_shared<TopOptions>();
      add_live_options(app, o->live);
      app.add_option("--count", o->count, "Draw this many frames, then exit (0: until q)")
          ->capture_default_str();
      return [o] { return run_top(*o); };
    }}};

}  // namespace
}  // namespace gpuscope::cli
