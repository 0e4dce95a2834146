// Kernel names taken apart, and the text and type helpers of the kernel catalogue.
#include "core/catalog_parse.h"

#include <cctype>

namespace gpuscope::catalog_detail {
namespace {

bool is_ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }

// The identifiers of an Itanium-mangled name without demangling it (profilers truncate long
// names, which the demangler then rejects): each <length><identifier> source name, skipping
// integer literals "L<type><digits>E" so that the 8 of "ILi8E" is never read as anything.
std::vector<std::string> mangled_identifiers(std::string_view m) {
  std::vector<std::string> out;
  size_t i = 2;  // After "_Z".
  while (i < m.size()) {
    const char c = m[i];
    if (c == 'L' && i + 2 < m.size() && std::islower(static_cast<unsigned char>(m[i + 1])) &&
        (std::isdigit(static_cast<unsigned char>(m[i + 2])) || m[i + 2] == 'n')) {
      const size_t e = m.find('E', i);
      if (e == std::string_view::npos) break;
      i = e + 1;
      continue;
    }
    // Substitutions (S_, S4_) and template parameters (T_, T0_) carry numbers that are not lengths.
    if ((c == 'S' || c == 'T') && i + 1 < m.size() &&
        (m[i + 1] == '_' || std::isdigit(static_cast<unsigned char>(m[i + 1])) ||
         std::isupper(static_cast<unsigned char>(m[i + 1])))) {
      size_t j = i + 1;
      while (j < m.size() && std::isalnum(static_cast<unsigned char>(m[j])) &&
             !std::islower(static_cast<unsigned char>(m[j])) && m[j] != '_')
        ++j;
      i = (j < m.size() && m[j] == '_') ? j + 1 : i + 1;
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t j = i;
      size_t n = 0;
      while (j < m.size() && std::isdigit(static_cast<unsigned char>(m[j])))
        n = n * 10 + static_cast<size_t>(m[j++] - '0');
      const size_t take = std::min(n, m.size() - j);
      out.emplace_back(m.substr(j, take));
      i = j + take;
      continue;
    }
    ++i;
  }
  return out;
}

// Precision of a type identifier (C++ types as they appear in demangled names), or kUnknown.
Precision type_precision(std::string_view id) {
  static constexpr std::array<std::string_view, 11> kFp8 = {
      "float_e4m3_t",    "float_e5m2_t",    "__nv_fp8_e4m3", "__nv_fp8_e5m2",  "Float8_e4m3fn", "Float8_e5m2",
      "Float8_e4m3fnuz", "Float8_e5m2fnuz", "float_ue8m0_t", "__hip_fp8_e4m3", "__hip_fp8_e5m2"};
  if (std::find(kFp8.begin(), kFp8.end(), id) != kFp8.end()) return Precision::kFp8;
  if (id == "int8_t" || id == "int8x4_t") return Precision::kInt8;
  if (id == "BFloat16" || id == "__nv_bfloat16" || id == "__nv_bfloat162" || id == "bfloat16_t" ||
      id == "__hip_bfloat16" || id == "bfloat16") {
    return Precision::kBf16;
  }
  if (id == "Half" || id == "__half" || id == "__half2" || id == "half_t" || id == "half" || id == "half2" ||
      id == "__nv_half") {
    return Precision::kFp16;
  }
  if (id == "tfloat32_t") return Precision::kTf32;
  if (id == "float" || id == "float2" || id == "float4") return Precision::kFp32;
  if (id == "double" || id == "double2") return Precision::kFp64;
  return Precision::kUnknown;
}

// Narrower types win: a kernel on c10::BFloat16 that accumulates in float is a bf16 kernel.
int narrowness(Precision p) {
  switch (p) {
    case Precision::kFp8:
      return 6;
    case Precision::kInt8:
      return 5;
    case Precision::kBf16:
    case Precision::kFp16:
      return 4;
    case Precision::kTf32:
      return 3;
    case Precision::kFp32:
      return 2;
    case Precision::kFp64:
      return 1;
    case Precision::kUnknown:
      return 0;
  }
  return 0;
}

Precision narrowest(Precision a, Precision b) { return narrowness(b) > narrowness(a) ? b : a; }

}  // namespace

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

// Splits on '_': "nvjet_sm90_tst_128x128" -> {"nvjet", "sm90", "tst", "128x128"}.
std::vector<std::string_view> underscore_tokens(std::string_view s) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == '_') {
      if (i > start) out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  return out;
}

// The words of a function's own name, lowercased: "AddC" -> {"add", "c"}, "bias_add_kernel" ->
// {"bias", "add", "kernel"}.
std::vector<std::string> words_of(std::string_view name) {
  std::vector<std::string> words;
  std::string current;
  for (size_t i = 0; i < name.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(name[i]);
    const bool upper = std::isupper(c) != 0;
    const bool prev_lower = i > 0 && std::islower(static_cast<unsigned char>(name[i - 1])) != 0;
    if (!std::isalnum(c) || (upper && prev_lower)) {
      if (!current.empty()) words.push_back(current);
      current.clear();
      if (!std::isalnum(c)) continue;
    }
    current += static_cast<char>(std::tolower(c));
  }
  if (!current.empty()) words.push_back(current);
  return words;
}

ParsedName parse_name(std::string_view raw) {
  ParsedName p;
  const bool mangled = raw.starts_with("_Z");
  p.text = mangled ? demangle_kernel_name(raw) : std::string(raw);
  if (mangled && p.text.starts_with("_Z")) {
    // Truncated: identifiers only. The function is the last name before the first 'I'
    // (template arguments) of the nested name.
    p.idents = mangled_identifiers(raw);
    for (const auto& id : p.idents) {
      if (!p.qualified.empty()) p.qualified += "::";
      p.qualified += id;
      p.base = id;
      // Stop at the first identifier followed by template arguments.
      const size_t at = raw.find(id);
      if (at != std::string_view::npos && at + id.size() < raw.size() && raw[at + id.size()] == 'I') break;
    }
    return p;
  }
  for (size_t at; (at = p.text.find("(anonymous namespace)::")) != std::string::npos;) p.text.erase(at, 23);
  const std::string& t = p.text;
  // The function name ends at the first '(' outside template brackets; the return type, if any,
  // ends at the last space before it outside brackets.
  int depth = 0;
  size_t name_end = t.size();
  size_t name_start = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    const char c = t[i];
    if (c == '<')
      ++depth;
    else if (c == '>' && depth > 0)
      --depth;
    else if (c == '(' && depth == 0) {
      name_end = i;
      break;
    } else if (c == ' ' && depth == 0)
      name_start = i + 1;
  }
  if (name_start >= name_end) name_start = 0;
  const std::string_view name = std::string_view(t).substr(name_start, name_end - name_start);
  const size_t lt = name.find('<');
  p.qualified = std::string(name.substr(0, lt));
  if (lt != std::string_view::npos) {
    int d = 0;
    size_t close = name.size();
    for (size_t i = lt; i < name.size(); ++i) {
      if (name[i] == '<')
        ++d;
      else if (name[i] == '>' && --d == 0) {
        close = i;
        break;
      }
    }
    p.args = std::string(name.substr(lt + 1, close - lt - 1));
  }
  const size_t colon = p.qualified.rfind("::");
  p.base = colon == std::string::npos ? p.qualified : p.qualified.substr(colon + 2);
  for (size_t i = 0; i < t.size();) {
    if (is_ident_char(t[i]) && !std::isdigit(static_cast<unsigned char>(t[i]))) {
      size_t j = i;
      while (j < t.size() && is_ident_char(t[j])) ++j;
      p.idents.emplace_back(t.substr(i, j - i));
      i = j;
    } else {
      ++i;
    }
  }
  return p;
}

Precision precision_of_types(const std::vector<std::string>& idents) {
  Precision best = Precision::kUnknown;
  for (size_t i = 0; i < idents.size(); ++i) {
    Precision p = type_precision(idents[i]);
    if (idents[i] == "signed" && i + 1 < idents.size() && idents[i + 1] == "char") p = Precision::kInt8;
    best = narrowest(best, p);
  }
  return best;
}

// The type of a short dtype token in library names: "bf16", "f16", "fp16", "f32", "tf32", "e4m3".
Precision token_precision(std::string_view tok) {
  if (tok == "bf16") return Precision::kBf16;
  if (tok == "fp16" || tok == "half") return Precision::kFp16;
  if (tok == "tf32") return Precision::kTf32;
  if (tok == "f32" || tok == "fp32" || tok == "float") return Precision::kFp32;
  if (tok == "f64" || tok == "fp64" || tok == "double") return Precision::kFp64;
  if (tok == "e4m3" || tok == "e5m2" || tok == "fp8" || tok == "f8") return Precision::kFp8;
  if (tok == "i8" || tok == "s8" || tok == "int8") return Precision::kInt8;
  return Precision::kUnknown;
}

// cuBLAS / CUTLASS instance names: "ampere_sgemm_128x64_nn", "volta_h884gemm_...",
// "cutlass_80_tensorop_s1688gemm_64x64_...", "cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_...",
// "cutlass_tensorop_s1688dgrad_optimized_tf32_...", "ampere_fp16_s16816gemm_fp16_...". An explicit
// dtype token wins; otherwise the letter before the operation names the type, and an "s" with a
// tensor-core instruction shape is TF32 on sm80+ (16x8x8) or fp16 inputs before it.
Precision blas_instance_precision(std::string_view name, int sm) {
  const auto toks = underscore_tokens(name);
  for (const auto tok : toks) {
    if (const Precision p = token_precision(tok); p != Precision::kUnknown && tok != "f32") return p;
  }
  static constexpr std::array<std::string_view, 5> kOps = {"gemm", "fprop", "dgrad", "wgrad", "gemv"};
  for (const auto tok : toks) {
    size_t op = std::string_view::npos;
    for (const auto o : kOps) {
      const size_t at = tok.find(o);
      if (at != std::string_view::npos && at + o.size() == tok.size()) op = at;
    }
    if (op == std::string_view::npos || op == 0) continue;
    std::string_view prefix = tok.substr(0, op);  // "s1688", "h884", "s", "gc", "i8816"
    size_t digits = prefix.find_first_of("0123456789");
    const std::string_view letters = prefix.substr(0, digits);
    const bool tensor_op = digits != std::string_view::npos;
    if (letters.empty()) continue;
    switch (letters.back()) {
      case 'h':
        return Precision::kFp16;
      case 'd':
      case 'z':
        return Precision::kFp64;
      case 'i':
        return Precision::kInt8;
      case 'c':
        return Precision::kFp32;  // Complex single (cgemm, gauss "gcgemm").
      case 's':
        if (!tensor_op) return Precision::kFp32;
        if (prefix.substr(digits) == "1688" && sm >= 80) return Precision::kTf32;
        return Precision::kFp16;
      default:
        break;
    }
  }
  return Precision::kUnknown;
}

// The SM version a name states: "sm80_", "cutlass_80_", "ampere_".
int sm_of(std::string_view name) {
  static constexpr std::array<std::pair<std::string_view, int>, 7> kArch = {
      {{"maxwell", 50}, {"pascal", 60}, {"volta", 70}, {"turing", 75}, {"ampere", 80}, {"ada", 89}, {"hopper", 90}}};
  for (const auto& [word, sm] : kArch)
    if (name.starts_with(word) || contains(name, "_" + std::string(word) + "_")) return sm;
  for (const auto tok : underscore_tokens(name)) {
    std::string_view digits = tok.starts_with("sm") ? tok.substr(2) : tok;
    if (digits.size() >= 2 && digits.size() <= 3 &&
        std::all_of(digits.begin(), digits.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
      return std::stoi(std::string(digits));
    }
  }
  return 0;
}

bool has_ident(const ParsedName& p, std::string_view id) {
  return std::find(p.idents.begin(), p.idents.end(), id) != p.idents.end();
}

bool any_ident_contains(const ParsedName& p, std::string_view part) {
  return std::any_of(p.idents.begin(), p.idents.end(), [&](const std::string& s) { return contains(s, part); });
}

}  // namespace gpuscope::catalog_detail
