// Minimal command-line parsing and JSON-line output shared by the workloads. Plain C++ (no CUDA)
// so that the CPU-side tests can use it too.
//
// Contract: flags are `--name value` or `--name=value`; a bare `--name` is a boolean switch.
// Unknown flags and malformed values are usage errors: one line on stderr, exit code 2
// (DESIGN.md, "Exit codes"). These are stand-alone programs, so exiting is fine here.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace gpuscope::workloads {

class Args {
 public:
  // argv[first..argc) are parsed; `first` skips the program name and any subcommand.
  Args(int argc, char** argv, int first) {
    for (int i = first; i < argc; ++i) {
      std::string a = argv[i];
      if (a.rfind("--", 0) != 0) Usage("unexpected argument '" + a + "'");
      a = a.substr(2);
      auto eq = a.find('=');
      if (eq != std::string::npos) {
        values_[a.substr(0, eq)] = a.substr(eq + 1);
      } else if (i + 1 < argc && std::string(argv[i + 1]).rfind("--", 0) != 0) {
        values_[a] = argv[++i];
      } else {
        values_[a] = "";
      }
    }
  }

  bool Flag(const std::string& name) {
    used_.insert(name);
    return values_.count(name) != 0;
  }
  std::string Str(const std::string& name, const std::string& def) {
    used_.insert(name);
    auto it = values_.find(name);
    return it == values_.end() ? def : it->second;
  }
  long Int(const std::string& name, long def) {
    used_.insert(name);
    auto it = values_.find(name);
    if (it == values_.end()) return def;
    char* end = nullptr;
    long v = std::strtol(it->second.c_str(), &end, 10);
    if (it->second.empty() || *end != '\0') Usage("--" + name + " needs an integer, got '" + it->second + "'");
    return v;
  }
  double Real(const std::string& name, double def) {
    used_.insert(name);
    auto it = values_.find(name);
    if (it == values_.end()) return def;
    char* end = nullptr;
    double v = std::strtod(it->second.c_str(), &end);
    if (it->second.empty() || *end != '\0') Usage("--" + name + " needs a number, got '" + it->second + "'");
    return v;
  }
  // One of `choices`; the first is the default.
  std::string Choice(const std::string& name, const std::vector<std::string>& choices) {
    std::string v = Str(name, choices.front());
    for (const auto& c : choices)
      if (c == v) return v;
    std::string all;
    for (const auto& c : choices) all += (all.empty() ? "" : "|") + c;
    Usage("--" + name + " must be " + all + ", got '" + v + "'");
    return v;
  }
  // Call after all lookups: rejects flags nobody asked for (typos must not pass silently).
  void RejectUnknown() const {
    for (const auto& [k, v] : values_)
      if (!used_.count(k)) Usage("unknown flag --" + k);
  }

  [[noreturn]] static void Usage(const std::string& msg) {
    std::fprintf(stderr, "usage error: %s\n", msg.c_str());
    std::exit(2);
  }

 private:
  std::map<std::string, std::string> values_;
  std::set<std::string> used_;
};

// Builds one JSON object on one line, in insertion order. Values are numbers, booleans or
// strings without characters that need escaping (case names, modes).
class JsonLine {
 public:
  JsonLine& Add(const std::string& k, const std::string& v) { return Raw(k, "\"" + v + "\""); }
  JsonLine& Add(const std::string& k, const char* v) { return Add(k, std::string(v)); }
  JsonLine& Add(const std::string& k, bool v) { return Raw(k, v ? "true" : "false"); }
  JsonLine& Add(const std::string& k, long v) { return Raw(k, std::to_string(v)); }
  JsonLine& Add(const std::string& k, int v) { return Raw(k, std::to_string(v)); }
  JsonLine& Add(const std::string& k, double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    return Raw(k, buf);
  }
  std::string Str() const { return "{" + body_ + "}"; }
  void Print() const {
    std::printf("%s\n", Str().c_str());
    std::fflush(stdout);
  }

 private:
  JsonLine& Raw(const std::string& k, const std::string& v) {
    body_ += (body_.empty() ? "\"" : ",\"") + k + "\":" + v;
    return *this;
  }
  std::string body_;
};

}  // namespace gpuscope::workloads
