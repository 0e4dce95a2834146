#include "render/html_page.h"

#include <algorithm>
#include <cmath>

#include <fmt/core.h>
#include <simdjson.h>
#include <nlohmann/json.hpp>

namespace gpuscope::html {
namespace {

// One colour per row of kIdleCauseTable, in its order.
constexpr std::string_view kCauseColours[] = {
    "#7b4fc9",  // memcpy
    "#a0522d",  // alloc
    "#d62728",  // input
    "#1f77b4",  // collective
    "#ff7f0e",  // launch
    "#17becf",  // queued
    "#e377c2",  // sync
    "#b8b000",  // host
    "#8c8c8c",  // other
};
static_assert(std::size(kCauseColours) == kNumIdleCauses, "one colour per idle cause (core/report.h)");

constexpr std::string_view kStyle = R"(
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;color:#1d2330;
margin:0;background:#f6f7f9}
main{max-width:1240px;margin:0 auto;padding:16px 20px 40px}
h1{font-size:22px;margin:8px 0 2px}h2{font-size:18px;margin:22px 0 8px;border-bottom:1px solid #d5d9e0}
h3{font-size:15px;margin:16px 0 6px}
.sub{color:#5b6476;font-size:13px}.null{color:#8a93a5;font-style:italic}
.cards{display:flex;flex-wrap:wrap;gap:10px}
.card{background:#fff;border:1px solid #d5d9e0;border-radius:6px;padding:8px 12px;min-width:150px}
.card .v{font-size:24px;font-weight:600}.card .l{font-size:12px;color:#5b6476}
.prov{display:inline-block;font-size:11px;border-radius:3px;padding:0 4px;margin-left:4px;color:#fff}
.prov.measured{background:#2e7d32}.prov.estimate{background:#b26a00}.prov.computed{background:#3559a8}
.prov.null{background:#8a93a5}
table{border-collapse:collapse;background:#fff;margin:4px 0}
td,th{border:1px solid #e1e4ea;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#eef0f4;font-weight:600}td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.name{max-width:640px;word-break:break-all;font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px}
.bar{display:inline-block;height:10px;background:#e6e9ef;width:160px;vertical-align:middle}
.bar i{display:block;height:10px}
svg{background:#fff;border:1px solid #d5d9e0;display:block;max-width:100%;height:auto}
svg text{font:11px system-ui,sans-serif;fill:#1d2330}
.legend span{display:inline-block;margin-right:12px;font-size:12px}
.legend b{display:inline-block;width:11px;height:11px;margin-right:4px;vertical-align:-1px}
.finding{background:#fff;border:1px solid #d5d9e0;border-left:5px solid #8a93a5;border-radius:4px;
padding:6px 12px;margin:8px 0}
.finding.high{border-left-color:#d62728}.finding.medium{border-left-color:#ff9f1a}
.finding.low{border-left-color:#2e9d4e}
.finding .t{font-weight:600}.finding .e{color:#3c4455;margin:4px 0}.finding .r{margin:2px 0}
.warn{background:#fff7e0;border:1px solid #e9c46a;padding:6px 10px;border-radius:4px;margin:6px 0}
.resolved{color:#2e7d32}.new{color:#c62828}.changed{color:#b26a00}.unchanged{color:#5b6476}
footer{color:#8a93a5;font-size:12px;margin-top:30px}.origin{color:#5b6477;font-size:12px;margin:0 0 8px;overflow-wrap:anywhere}
)";

std::string valid_utf8(std::string_view s) {
  if (simdjson::validate_utf8(s.data(), s.size())) return std::string(s);
  // The JSON report's replacement (report_json.cpp), so both show the same name.
  const std::string quoted =
      nlohmann::json(std::string(s)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return nlohmann::json::parse(quoted).get<std::string>();
}

}  // namespace

std::string escape(std::string_view text) {
  const std::string valid = valid_utf8(text);
  std::string out;
  out.reserve(valid.size());
  for (char c : valid) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      case '\n':
      case '\t':
        out.push_back(c);
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
          out += fmt::format("\\x{:02x}", static_cast<unsigned>(static_cast<unsigned char>(c)));
        } else {
          out.push_back(c);
        }
    }
  }
  return out;
}

std::string page_head(std::string_view title) {
  return fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n"
      "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\n"
      "<title>{}</title>\n<style>{}</style></head>\n<body><main>\n",
      escape(title), kStyle);
}

std::string origin_line(const PageOrigin& origin) {
  std::string line;
  if (!origin.version.empty()) line = "gpuscope " + escape(origin.version);
  if (!origin.date.empty()) line += (line.empty() ? "" : " · ") + escape(origin.date);
  if (!origin.command_line.empty())
    line += (line.empty() ? "" : " · ") + ("<code>" + escape(origin.command_line) + "</code>");
  return line.empty() ? "" : "<p class=origin>" + line + "</p>\n";
}

std::string page_tail(const PageOrigin& origin) {
  std::string written = "Written by gpuscope";
  if (!origin.version.empty()) written += " " + escape(origin.version);
  if (!origin.date.empty()) written += " on " + escape(origin.date);
  if (!origin.command_line.empty()) written += " with <code>" + escape(origin.command_line) + "</code>";
  return "<footer>" + written +
         ". Self-contained: no scripts, nothing loaded from the network. "
         "Estimates are labelled as such; null means not measured.</footer>\n</main></body></html>\n";
}

std::string short_name(std::string_view name, size_t max_chars) {
  size_t chars = 0, cut = name.size();
  for (size_t i = 0; i < name.size(); ++i) {
    if ((static_cast<unsigned char>(name[i]) & 0xC0) == 0x80) continue;  // inside a UTF-8 character
    if (chars++ == max_chars) {
      cut = i;
      break;
    }
  }
  if (cut == name.size()) return escape(name);
  return fmt::format("<span title=\"{}\">{}…</span>", escape(name), escape(name.substr(0, cut)));
}

std::string_view cause_colour(IdleCauseId cause) { return kCauseColours[static_cast<size_t>(cause)]; }

std::string cause_legend() {
  std::string out =
      fmt::format("<div class=legend><span><b style=\"background:{}\"></b>kernels running</span>", kKernelColour);
  for (const IdleCauseInfo& c : kIdleCauseTable) {
    out += fmt::format("<span><b style=\"background:{}\"></b>idle: {}</span>", cause_colour(c.id), c.name);
  }
  return out + "</div>\n";
}

std::string pct(std::optional<double> value, int decimals) {
  if (!value || !std::isfinite(*value)) return "<span class=null>null</span>";
  return fmt::format("{:.{}f}%", *value, decimals);
}

std::string ms(double ns) { return fmt::format("{:.2f} ms", ns / 1e6); }

std::string bar(double value, std::string_view colour) {
  const double w = std::isfinite(value) ? std::clamp(value, 0.0, 100.0) : 0.0;
  return fmt::format("<span class=bar><i style=\"width:{:.1f}%;background:{}\"></i></span>", w, colour);
}

std::string provenance(std::string_view kind) { return fmt::format("<span class=\"prov {0}\">{0}</span>", kind); }

}  // namespace gpuscope::html
