// `gpuscope top`: a live terminal view. One row per GPU with utilization beside SM active,
// tensor and DRAM activity, memory and power, and their recent history; processes below; waste
// signals highlighted. What is drawn, and how it fits the terminal, is top_view.h; this file
// owns the terminal.
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
#include "cli/top_view.h"
#include "core/text.h"

namespace gpuscope::cli {
namespace {

struct TopOptions {
  LiveCliOptions live;
  int count = 0;  // Frames to draw, 0 = until q / Ctrl-C.
  std::string sort = "gpu";
};

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
  // Columns and rows of the terminal; 0 when unknown.
  winsize size() const {
    winsize ws{};
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) != 0) return winsize{};
    return ws;
  }
  bool has_keyboard() const { return restore_termios_; }
  // Reads the keys pressed since the last call, never blocking: true if 'q' was; each 's'
  // moves `sort` to the next key.
  bool poll_keys(TopSort& sort) {
    if (!restore_termios_) return false;  // No keyboard (stdin not a terminal).
    pollfd pfd{STDIN_FILENO, POLLIN, 0};
    while (poll(&pfd, 1, 0) > 0) {
      char c = 0;
      if (read(STDIN_FILENO, &c, 1) != 1) return false;
      if (c == 'q' || c == 'Q') return true;
      if (c == 's' || c == 'S') sort = static_cast<TopSort>((static_cast<size_t>(sort) + 1) % std::size(kTopSortNames));
    }
    return false;
  }

 private:
  bool interactive_;
  termios saved_{};
  bool restore_termios_ = false;
};

int run_top(const TopOptions& o) {
  auto sort = top_sort_from_name(o.sort);
  if (!sort) {
    fmt::print(stderr, "gpuscope: --sort {}: expected gpu, util, sm or mem\n", terminal_safe(o.sort));
    return 2;
  }
  auto settings = live_settings(o.live);
  if (!settings) return 2;
  auto sampler = open_sampler_or_report();
  if (!sampler) return 2;
  install_interrupt_handlers();
  const bool tty = isatty(STDOUT_FILENO) != 0;
  const char* no_color = std::getenv("NO_COLOR");
  const bool color = tty && !(no_color && *no_color);
  Terminal term(tty);
  TopHistory history;
  TopSort order = *sort;
  // The first frame after a short wait (GPM needs >= 100 ms), then every interval.
  settings->loop.should_stop = [&term, &order] { return g_interrupted.load() || term.poll_keys(order); };
  nvml::LiveLoop loop(*sampler, settings->loop);
  int rc = 0;
  loop.run([&](const nvml::LiveFrame& frame) {
    if (!frame.status.ok()) {
      term.restore();
      fmt::print(stderr, "gpuscope: {}\n", terminal_safe(frame.status.message()));
      rc = 2;
      return false;
    }
    history.add(*frame.snapshot);
    char when[32];
    std::time_t now = std::time(nullptr);
    std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", std::localtime(&now));
    TopInput in{&sampler->devices(),
                frame.snapshot,
                frame.signals,
                &history,
                sampler->driver_version(),
                static_cast<double>(settings->interval_ns) / 1e9,
                when,
                order,
                term.has_keyboard(),
                frame.warnings};
    std::string out;
    if (tty) {
      // One column spare: a line that fills the last column leaves the cursor pending a wrap,
      // where "erase to end of line" would erase that column. Without colour, alert lines get
      // a "! " marker: two more.
      const winsize ws = term.size();
      const size_t cols = ws.ws_col > 0 ? ws.ws_col : 80;
      const size_t width = cols - 1 - (color ? 0 : 2);
      std::vector<TopLine> lines = render_top(in, width, ws.ws_row > 0 ? ws.ws_row : 0);
      if (ws.ws_row > 0 && lines.size() > ws.ws_row) lines.resize(ws.ws_row);
      out += "\x1b[H";
      for (size_t i = 0; i < lines.size(); ++i) {
        const TopLine& l = lines[i];
        if (color && l.style == TopLine::kHeader)
          out += "\x1b[1m" + l.text + "\x1b[0m";
        else if (color && l.style == TopLine::kAlert)
          out += "\x1b[1;31m" + l.text + "\x1b[0m";
        else if (!color && l.style == TopLine::kAlert)
          out += "! " + l.text;
        else
          out += l.text;
        out += "\x1b[K";                        // Erase the rest of the previous frame's line.
        if (i + 1 < lines.size()) out += "\n";  // No newline after the last row: it would scroll.
      }
      out += "\x1b[J";  // Erase below the last line.
    } else {
      // Not a terminal: every line at full width (nothing to fit), one block per interval.
      std::vector<TopLine> lines = render_top(in, 100000, 0);
      // No padding: a file or pipe gets each line's text, never the spaces that align a screen.
      for (const TopLine& l : lines) {
        std::string line = (l.style == TopLine::kAlert ? "! " : "") + l.text;
        line.erase(line.find_last_not_of(' ') + 1);
        out += line + "\n";
      }
      out += "\n";
    }
    std::fwrite(out.data(), 1, out.size(), stdout);
    std::fflush(stdout);
    return o.count == 0 || frame.index + 1 < o.count;
  });
  return rc;
}

const CommandRegistration kTop{CommandSpec{
    "top", "Live view of every GPU and process: utilization beside SM and tensor activity, waste signals", 30,
    [](CLI::App& app) -> std::function<int()> {
      auto o = std::make_shared<TopOptions>();
      add_live_options(app, o->live);
      app.add_option("--count", o->count, "Draw this many frames, then exit (0: until q)")
          ->capture_default_str()
          ->check(count_between(0, 1'000'000'000, "--count"));
      app.add_option("--sort", o->sort,
                     "Order of GPUs and processes: gpu (index), util, sm (SM active; processes: SM%) or mem, "
                     "largest first; the s key cycles through them")
          ->capture_default_str()
          ->check(one_of({"gpu", "util", "sm", "mem"}, "--sort", "--sort mem"));
      app.footer(
          "\nExamples:\n"
          "  gpuscope top\n"
          "  gpuscope top --sort mem --interval 500ms\n"
          "  gpuscope top --count 1 > snapshot.txt     # one frame as plain text\n\n"
          "Fits the terminal: at 80x24 narrower columns are dropped in a fixed order (temperature, power,\n"
          "occupancy, DRAM, name, memory, tensor), never cut; GPU, utilization and SM active stay.\n"
          "Under each GPU: utilization beside SM active over the last samples (sparklines).\n\n"
          "Keys: q quits, s changes the sort order.\n\n"
          "Exit codes: 0 quit with q, Ctrl-C or after --count frames; 2 bad usage, or no NVML or\n"
          "GPU (one line on stderr says what).");
      return [o] { return run_top(*o); };
    }}};

}  // namespace
}  // namespace gpuscope::cli
