#include "core/catalog.h"

#include <cxxabi.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

namespace gpuscope {
namespace {

bool contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

template <size_t N>
bool contains_any(std::string_view s, const std::array<std::string_view, N>& parts) {
  return std::any_of(parts.begin(), parts.end(), [&](std::string_view p) { return contains(s, p); });
}

template <size_t N>
bool starts_with_any(std::string_view s, const std::array<std::string_view, N>& parts) {
  return std::any_of(parts.begin(), parts.end(), [&](std::string_view p) { return s.starts_with(p); });
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

bool is_ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }

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
        (m[i + 1] == '_' || std::isdigit(static_cast<unsigned char>(m[i + 1])) || std::isupper(static_cast<unsigned char>(m[i + 1])))) {
      size_t j = i + 1;
      while (j < m.size() && std::isalnum(static_cast<unsigned char>(m[j])) && !std::islower(static_cast<unsigned char>(m[j])) && m[j] != '_') ++j;
      i = (j < m.size() && m[j] == '_') ? j + 1 : i + 1;
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t j = i;
      size_t n = 0;
      while (j < m.size() && std::isdigit(static_cast<unsigned char>(m[j]))) n = n * 10 + static_cast<size_t>(m[j++] - '0');
      const size_t take = std::min(n, m.size() - j);
      out.emplace_back(m.substr(j, take));
      i = j + take;
      continue;
    }
    ++i;
  }
  return out;
}

// A kernel name taken apart: the function's qualified name, its last component, the text of
// its template arguments, and every identifier in the whole name.
struct ParsedName {
  std::string text;       // Demangled where it was mangled; "(anonymous namespace)::" removed.
  std::string qualified;  // "at::native::reduce_kernel"
  std::string base;       // "reduce_kernel"
  std::string args;       // Template arguments of the function, without the outer <>.
  std::vector<std::string> idents;
};

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
    if (c == '<') ++depth;
    else if (c == '>' && depth > 0) --depth;
    else if (c == '(' && depth == 0) { name_end = i; break; }
    else if (c == ' ' && depth == 0) name_start = i + 1;
  }
  if (name_start >= name_end) name_start = 0;
  const std::string_view name = std::string_view(t).substr(name_start, name_end - name_start);
  const size_t lt = name.find('<');
  p.qualified = std::string(name.substr(0, lt));
  if (lt != std::string_view::npos) {
    int d = 0;
    size_t close = name.size();
    for (size_t i = lt; i < name.size(); ++i) {
      if (name[i] == '<') ++d;
      else if (name[i] == '>' && --d == 0) { close = i; break; }
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

// Precision of a type identifier (C++ types as they appear in demangled names), or kUnknown.
Precision type_precision(std::string_view id) {
  static constexpr std::array<std::string_view, 11> kFp8 = {
      "float_e4m3_t", "float_e5m2_t", "__nv_fp8_e4m3", "__nv_fp8_e5m2", "Float8_e4m3fn", "Float8_e5m2",
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
    case Precision::kFp8: return 6;
    case Precision::kInt8: return 5;
    case Precision::kBf16:
    case Precision::kFp16: return 4;
    case Precision::kTf32: return 3;
    case Precision::kFp32: return 2;
    case Precision::kFp64: return 1;
    case Precision::kUnknown: return 0;
  }
  return 0;
}

Precision narrowest(Precision a, Precision b) { return narrowness(b) > narrowness(a) ? b : a; }

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
      case 'h': return Precision::kFp16;
      case 'd':
      case 'z': return Precision::kFp64;
      case 'i': return Precision::kInt8;
      case 'c': return Precision::kFp32;  // Complex single (cgemm, gauss "gcgemm").
      case 's':
        if (!tensor_op) return Precision::kFp32;
        if (prefix.substr(digits) == "1688" && sm >= 80) return Precision::kTf32;
        return Precision::kFp16;
      default: break;
    }
  }
  return Precision::kUnknown;
}

// The SM version a name states: "sm80_", "cutlass_80_", "ampere_".
int sm_of(std::string_view name) {
  static constexpr std::array<std::pair<std::string_view, int>, 7> kArch = {{
      {"maxwell", 50}, {"pascal", 60}, {"volta", 70}, {"turing", 75}, {"ampere", 80}, {"ada", 89}, {"hopper", 90}}};
  for (const auto& [word, sm] : kArch) if (name.starts_with(word) || contains(name, "_" + std::string(word) + "_")) return sm;
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

// ---- Families. Each returns nullopt when the name is not one of its own.

std::optional<KernelInfo> nccl_kernel(std::string_view raw, const ParsedName& p) {
  if (!p.base.starts_with("ncclDevKernel_") && !p.base.starts_with("ncclKernel_") &&
      !p.base.starts_with("rcclKernel_") && !p.base.starts_with("ncclDevFunc_")) {
    return std::nullopt;
  }
  (void)raw;
  KernelInfo k{KernelLibrary::kNccl, KernelCategory::kCommunication, Precision::kUnknown};
  const auto toks = underscore_tokens(p.base);
  // Collectives that move bytes without arithmetic run as int8_t/uint8_t: no data type.
  const bool reduces = std::any_of(toks.begin(), toks.end(), [](std::string_view t) {
    return t == "AllReduce" || t == "Reduce" || t == "ReduceScatter";
  });
  if (!reduces) return k;
  for (const auto tok : toks) {
    static constexpr std::array<std::pair<std::string_view, Precision>, 12> kTypes = {{
        {"f32", Precision::kFp32}, {"float", Precision::kFp32}, {"f16", Precision::kFp16}, {"half", Precision::kFp16},
        {"bf16", Precision::kBf16}, {"f64", Precision::kFp64}, {"double", Precision::kFp64}, {"i8", Precision::kInt8},
        {"int8", Precision::kInt8}, {"f8e4m3", Precision::kFp8}, {"f8e5m2", Precision::kFp8}, {"u8", Precision::kInt8}}};
    for (const auto& [t, prec] : kTypes) if (tok == t) k.precision = prec;
  }
  return k;
}

// Tensile (rocBLAS, hipBLASLt): "Cijk_Ailk_Bljk_HHS_BH_MT64x..." where the token after the index
// orders names the types: one letter when input, output and compute agree ("S"; a following
// "B" in "SB" means beta is used), else input/output/compute ("HHS", "BBS", "I8II").
std::optional<KernelInfo> tensile_kernel(const ParsedName& p) {
  if (!p.base.starts_with("Cijk_") && !p.base.starts_with("Cij_")) return std::nullopt;
  KernelInfo k{KernelLibrary::kTensile, KernelCategory::kGemm, Precision::kUnknown};
  const auto toks = underscore_tokens(p.base);
  size_t i = 1;
  while (i < toks.size() && (toks[i].starts_with("A") || toks[i].starts_with("B")) && toks[i].size() >= 3 &&
         std::all_of(toks[i].begin() + 1, toks[i].end(), [](char c) { return std::islower(static_cast<unsigned char>(c)); })) {
    ++i;
  }
  if (i >= toks.size()) return k;
  const std::string_view t = toks[i];
  if (t.starts_with("F8") || t.starts_with("B8") || t.starts_with("F8B8") || t.starts_with("B8F8")) {
    k.precision = Precision::kFp8;
  } else if (t.starts_with("I8") || t.starts_with("4xi8")) {
    k.precision = Precision::kInt8;
  } else if (t.starts_with("X")) {
    k.precision = Precision::kTf32;  // xf32, CDNA3's reduced-precision fp32 matrix math.
  } else {
    switch (t.front()) {
      case 'S':
      case 'C': k.precision = Precision::kFp32; break;
      case 'D':
      case 'Z': k.precision = Precision::kFp64; break;
      case 'H': k.precision = Precision::kFp16; break;
      case 'B': k.precision = Precision::kBf16; break;
      case 'I': k.precision = Precision::kInt8; break;
      default: break;
    }
  }
  return k;
}

// cuBLASLt's nvjet kernels (CUDA 12.6+): "nvjet_[sm90_]<types>_<tiles>..._<layout>" where the
// types are the inputs, compute and output by letter: h fp16, t bf16, s fp32 (a "tf32" token
// when TF32), d fp64, i int8, and a leading "qq"/"ee" for fp8 inputs ("nvjet_qqtst_...").
std::optional<KernelInfo> nvjet_kernel(const ParsedName& p) {
  if (!p.base.starts_with("nvjet_")) return std::nullopt;
  KernelInfo k{KernelLibrary::kCublas, KernelCategory::kGemm, Precision::kUnknown};
  const auto toks = underscore_tokens(p.base);
  const bool tf32 = std::find(toks.begin(), toks.end(), "tf32") != toks.end();
  for (size_t i = 1; i < toks.size(); ++i) {
    const std::string_view t = toks[i];
    if (t.starts_with("sm") && t.size() > 2 && std::isdigit(static_cast<unsigned char>(t[2]))) continue;
    if (!std::all_of(t.begin(), t.end(), [](char c) { return std::islower(static_cast<unsigned char>(c)); })) break;
    if (t.starts_with("qq") || t.starts_with("ee")) {
      k.precision = Precision::kFp8;
    } else {
      switch (t.front()) {
        case 'h': k.precision = Precision::kFp16; break;
        case 't': k.precision = Precision::kBf16; break;
        case 's': k.precision = tf32 ? Precision::kTf32 : Precision::kFp32; break;
        case 'd': k.precision = Precision::kFp64; break;
        case 'i': k.precision = Precision::kInt8; break;
        default: break;
      }
    }
    break;
  }
  return k;
}

// NVIDIA's flat names from cuBLAS and cuDNN: "<arch>_<op>..." ("ampere_sgemm_128x64_nn",
// "volta_h884gemm_...", "sm80_xmma_gemm_f32f32_...", "sm80_xmma_fprop_implicit_gemm_tf32f32_...",
// "cudnn_infer_volta_scudnn_128x64_relu_small_nn_v1"). xmma names list the types as
// "<a><b>_<c><accumulator>": the first type is the math's.
std::optional<KernelInfo> nvidia_flat_kernel(const ParsedName& p) {
  const std::string_view b = p.base;
  const auto toks = underscore_tokens(b);
  if (toks.empty()) return std::nullopt;
  const bool cudnn = b.starts_with("cudnn") || contains(b, "_cudnn") || contains(b, "scudnn");
  const auto is_conv_op = [](std::string_view t) { return t == "fprop" || t == "dgrad" || t == "wgrad" || t == "conv"; };
  // cuDNN's own convolution kernels: "[cudnn_{infer,train}_]<arch>_scudnn_[winograd_]...".
  for (const auto t : toks) {
    if (t.size() == 6 && t.substr(1) == "cudnn") {
      KernelInfo k{KernelLibrary::kCudnn, KernelCategory::kConvolution, Precision::kUnknown};
      switch (t.front()) {
        case 's': k.precision = Precision::kFp32; break;
        case 'h': k.precision = Precision::kFp16; break;
        case 'd': k.precision = Precision::kFp64; break;
        case 'i': k.precision = Precision::kInt8; break;
        default: break;
      }
      return k;
    }
  }
  const int sm = sm_of(b);
  const size_t xmma = std::find(toks.begin(), toks.end(), "xmma") - toks.begin();
  if (xmma < toks.size()) {
    KernelInfo k{cudnn ? KernelLibrary::kCudnn : KernelLibrary::kCublas, KernelCategory::kGemm, Precision::kUnknown};
    if (xmma + 1 < toks.size() && is_conv_op(toks[xmma + 1])) k.category = KernelCategory::kConvolution;
    // "<a><b>_<math><accumulator>_<output>": the storage types, then the math's
    // (sm80_xmma_gemm_f32f32_tf32f32_f32 is TF32 math on fp32 data).
    int typed = 0;
    for (size_t i = xmma + 1; i < toks.size() && typed < 2; ++i) {
      const std::string_view t = toks[i];
      static constexpr std::array<std::string_view, 9> kTypes = {"tf32", "bf16", "f16", "f32", "f64", "e4m3", "e5m2", "s8", "i8"};
      for (const auto ty : kTypes) {
        if (t.starts_with(ty) && t.size() > ty.size() && !std::isdigit(static_cast<unsigned char>(t[ty.size()]))) {
          k.precision = ty == "f16" ? Precision::kFp16 : token_precision(ty);
          ++typed;
          break;
        }
      }
    }
    return k;
  }
  static constexpr std::array<std::string_view, 9> kArchPrefixes = {
      "maxwell_", "pascal_", "volta_", "turing_", "ampere_", "ada_", "hopper_", "sm", "cutlass"};
  // CUTLASS instance names inside cuDNN carry no SM ("cutlass_tensorop_s1688dgrad_optimized_tf32_...").
  const bool arch_named = starts_with_any(b, kArchPrefixes) && (sm > 0 || b.starts_with("cutlass"));
  if (!arch_named) return std::nullopt;
  for (const auto t : toks) {
    if (t.ends_with("gemm") || t.ends_with("gemv")) {
      return KernelInfo{b.starts_with("cutlass") ? KernelLibrary::kCutlass : KernelLibrary::kCublas,
                        KernelCategory::kGemm, blas_instance_precision(b, sm)};
    }
    if (t.ends_with("fprop") || t.ends_with("dgrad") || t.ends_with("wgrad")) {
      return KernelInfo{b.starts_with("cutlass") ? KernelLibrary::kCutlass : KernelLibrary::kCudnn,
                        KernelCategory::kConvolution, blas_instance_precision(b, sm)};
    }
  }
  return std::nullopt;
}

// CUTLASS templates: "cutlass::Kernel<cutlass_80_tensorop_s1688gemm_...>" (an instance name as
// the argument), "cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<...>>",
// "cutlass_cudnn_train::Kernel<...ImplicitGemmConvolution<...>>" (cuDNN's private copy).
std::optional<KernelInfo> cutlass_kernel(const ParsedName& p) {
  const std::string_view q = p.qualified;
  const bool cutlass_ns = q.starts_with("cutlass") || p.base.starts_with("cutlass3x_") || p.base.starts_with("cutlass_");
  if (!cutlass_ns) return std::nullopt;
  const bool cudnn = contains(q, "cudnn") || any_ident_contains(p, "cutlass_cudnn");
  KernelInfo k{cudnn ? KernelLibrary::kCudnn : KernelLibrary::kCutlass, KernelCategory::kGemm, Precision::kUnknown};
  // An instance name among the arguments says it all.
  for (const auto& id : p.idents) {
    if ((id.starts_with("cutlass_") || id.starts_with("cutlass3x_")) && id.find_first_of("0123456789") != std::string::npos &&
        !contains(id, "cudnn")) {
      if (const auto flat = nvidia_flat_kernel(ParsedName{id, id, id, "", {}})) {
        KernelInfo out = *flat;
        out.library = k.library;
        return out;
      }
    }
  }
  if (has_ident(p, "conv") || any_ident_contains(p, "Convolution") || any_ident_contains(p, "Conv2d") ||
      any_ident_contains(p, "Conv3d")) {
    k.category = KernelCategory::kConvolution;
  } else if (cudnn && any_ident_contains(p, "ReduceSplitK")) {
    k.category = KernelCategory::kConvolution;  // cuDNN's split-K reduction after a wgrad.
  } else if (any_ident_contains(p, "Attention") || any_ident_contains(p, "fmha") || any_ident_contains(p, "Fmha")) {
    k.category = KernelCategory::kAttention;
  }
  k.precision = precision_of_types(p.idents);
  return k;
}

// Fused attention outside cuDNN: FlashAttention ("flash_fwd_kernel<Flash_fwd_kernel_traits<...,
// cutlass::bfloat16_t...>>", "flash::flash_bwd_dot_do_o_kernel"), PyTorch's memory-efficient
// attention ("fmha_cutlassF_bf16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<...>)").
std::optional<KernelInfo> attention_kernel(const ParsedName& p) {
  const std::string lq = lower(p.qualified);
  const bool flash = lq.starts_with("flash::") || p.base.starts_with("flash_") || any_ident_contains(p, "Flash_fwd_kernel_traits") ||
                     any_ident_contains(p, "Flash_bwd_kernel_traits");
  const bool memeff = p.base.starts_with("fmha_") || contains(lq, "efficient_attention") ||
                      any_ident_contains(p, "PyTorchMemEffAttention") || contains(lq, "attention_kernel");
  if (!flash && !memeff) return std::nullopt;
  KernelInfo k{flash ? KernelLibrary::kFlashAttention : KernelLibrary::kAten, KernelCategory::kAttention,
               precision_of_types(p.idents)};
  if (k.precision == Precision::kUnknown) {
    for (const auto t : underscore_tokens(p.base)) {
      if (t == "f16") k.precision = Precision::kFp16;
      else if (const Precision tp = token_precision(t); tp != Precision::kUnknown) k.precision = tp;
      if (k.precision != Precision::kUnknown) break;
    }
  }
  return k;
}

// cuDNN outside the flat names above: runtime-compiled SDPA ("cudnn_generated_fort_native_sdpa_
// sm90_flash_fprop_wgmma_f16_knob_7_..."), the cudnn:: and cask_cudnn:: namespaces, and free
// functions of its convolution algorithms (FFT, Winograd, implicit GEMM, wgrad/dgrad engines).
std::optional<KernelInfo> cudnn_kernel(const ParsedName& p) {
  const std::string_view q = p.qualified;
  const std::string lb = lower(p.base);
  static constexpr std::array<std::string_view, 12> kConvFunctions = {
      "implicit_convolve", "explicit_convolve", "precomputed_convolve", "fft2d_", "fft3d_", "fft1d_",
      "wgrad_alg", "dgrad_alg", "dgrad2d_alg", "conv2d_grouped_direct", "im2col", "flip_filter"};
  const bool ns = q.starts_with("cudnn::") || q.starts_with("cask_cudnn");
  const bool flat_attention =
      lb.starts_with("cudnn") && (contains(lb, "sdpa") || contains(lb, "fmha") || contains(lb, "flash"));
  const bool conv_function = starts_with_any(lb, kConvFunctions) || lb == "wgrad_alg0_engine" || lb == "dgrad_engine";
  if (!ns && !conv_function && !flat_attention) return std::nullopt;
  KernelInfo k{KernelLibrary::kCudnn, KernelCategory::kConvolution, precision_of_types(p.idents)};
  if (contains(lb, "sdpa") || contains(lb, "fmha") || contains(lb, "flash") || lb.starts_with("compute_dot_do_o") ||
      lb.starts_with("convert_dq_to")) {
    k.category = KernelCategory::kAttention;
    // cuDNN's "f16" covers both 16-bit types; only an explicit bf16 or fp8 is evidence.
    k.precision = Precision::kUnknown;
    for (const auto t : underscore_tokens(lb)) {
      if (t == "bf16" || t == "e4m3" || t == "e5m2" || t == "fp8") k.precision = token_precision(t);
    }
    return k;
  }
  if (lb.starts_with("bn_") || contains(lb, "batchnorm") || contains(lb, "batch_norm") || contains(lb, "softmax") ||
      contains(lb, "pooling") || contains(lb, "lrn")) {
    k.category = KernelCategory::kReduction;
  } else if (contains(q, "::ops::") || contains(lb, "nchwtonhwc") || contains(lb, "nhwctonchw") ||
             contains(lb, "scale") || contains(lb, "activation") || contains(lb, "transpose")) {
    k.category = KernelCategory::kElementwise;
  } else if (contains(q, "::fusion::")) {
    k.category = KernelCategory::kOther;
  }
  return k;
}

// cuBLAS helpers and legacy kernels with C++ names: gemv2N_kernel, gemvx::kernel,
// gemmk1_kernel, splitKreduce_kernel, cublasLt::*, the cuBLASLt epilogue, sgemm_largek_lds64,
// scal_kernel. A helper launched by a GEMM call counts as GEMM time: the user asked for a GEMM.
std::optional<KernelInfo> cublas_kernel(const ParsedName& p) {
  const std::string_view q = p.qualified;
  const std::string lb = lower(p.base);
  static constexpr std::array<std::string_view, 8> kFunctions = {
      "gemv", "gemmk1", "gemmsn", "splitkreduce", "sgemm_largek", "dgemm_largek", "scal_kernel", "gemm_kernel"};
  const bool cublas_types = any_ident_contains(p, "cublas");
  const bool named = q.starts_with("cublas") || contains(q, "gemvx::") || starts_with_any(lb, kFunctions) ||
                     (q.starts_with("epilogue::") && cublas_types);
  if (!named && !(cublas_types && (contains(lb, "gemm") || contains(lb, "gemv")))) return std::nullopt;
  KernelInfo k{KernelLibrary::kCublas, KernelCategory::kGemm, precision_of_types(p.idents)};
  if (contains(lb, "dot") || contains(lb, "nrm2") || contains(lb, "asum") || contains(lb, "amax")) {
    k.category = KernelCategory::kReduction;
  }
  return k;
}

// Triton. Inductor names its kernels by kind: triton_poi_ (pointwise), triton_red_ (reduction),
// triton_per_ (persistent reduction), triton_tem_ (a template: GEMM, convolution or flex
// attention). Older Inductor names ("triton__0d1d2d") and user kernels do not say.
std::optional<KernelInfo> triton_kernel(const ParsedName& p) {
  if (!p.base.starts_with("triton_")) return std::nullopt;
  KernelInfo k{KernelLibrary::kTriton, KernelCategory::kOther, Precision::kUnknown};
  const std::string_view b = p.base;
  if (b.starts_with("triton_poi_")) {
    k.category = KernelCategory::kElementwise;
  } else if (b.starts_with("triton_red_") || b.starts_with("triton_per_")) {
    k.category = KernelCategory::kReduction;
  } else if (b.starts_with("triton_tem_")) {
    k.category = contains(b, "convolution") ? KernelCategory::kConvolution
                 : (contains(b, "flex_attention") || contains(b, "attention")) ? KernelCategory::kAttention
                                                                                : KernelCategory::kGemm;
  }
  return k;
}

// MIOpen: "MIOpenBatchNormFwdTrainSpatial", "miopenSp3AsmConv_v21_1_3_gfx9_fp32", "naive_conv_fwd_nchw_
// float_double_float", "igemm_fwd_gtcx_nhwc_fp16_...", "gridwise_convolution_implicit_gemm_...".
std::optional<KernelInfo> miopen_kernel(const ParsedName& p) {
  const std::string lb = lower(p.base);
  static constexpr std::array<std::string_view, 6> kPrefixes = {"miopen", "naive_conv", "igemm_", "gridwise_convolution",
                                                                "gridwise_generic_reduction", "transpose_nchw"};
  if (!starts_with_any(lb, kPrefixes)) return std::nullopt;
  KernelInfo k{KernelLibrary::kMiopen, KernelCategory::kOther, precision_of_types(p.idents)};
  if (contains(lb, "conv") || lb.starts_with("igemm") || contains(lb, "winograd")) k.category = KernelCategory::kConvolution;
  else if (contains(lb, "batchnorm") || contains(lb, "pooling") || contains(lb, "softmax") || contains(lb, "reduction") ||
           contains(lb, "layernorm") || contains(lb, "lrn")) k.category = KernelCategory::kReduction;
  else if (contains(lb, "tensor") || contains(lb, "transpose") || contains(lb, "activ") || contains(lb, "op")) {
    k.category = KernelCategory::kElementwise;
  }
  if (k.precision == Precision::kUnknown) {
    for (const auto t : underscore_tokens(lb)) {
      if (const Precision tp = token_precision(t); tp != Precision::kUnknown) { k.precision = tp; break; }
    }
  }
  return k;
}

// Category of a PyTorch (ATen) kernel, FBGEMM's and CUB's, by the function's own name: the
// template arguments (functors like ReduceAdd inside an index_add kernel) do not change what
// the kernel is.
KernelCategory aten_category(const ParsedName& p) {
  const std::string lb = lower(p.base);
  if (lb == "multi_tensor_apply_kernel") {
    static constexpr std::array<std::string_view, 8> kOptimizers = {"adam", "sgd", "adagrad", "lamb", "lion",
                                                                    "fusedoptimizer", "momentum", "rmsprop"};
    const std::string args = lower(p.args);
    if (contains_any(args, kOptimizers)) return KernelCategory::kOptimizer;
    if (contains(args, "normfunctor")) return KernelCategory::kReduction;  // _foreach_norm
    return KernelCategory::kElementwise;  // _foreach_* arithmetic
  }
  // FBGEMM's table-batched embeddings fuse the optimizer into the backward.
  if (lb.starts_with("split_embedding_backward_codegen_") && !contains(lb, "find_long_segments")) {
    static constexpr std::array<std::string_view, 5> kOptimizers = {"adagrad", "adam", "sgd", "lamb", "lars"};
    if (contains_any(lb, kOptimizers)) return KernelCategory::kOptimizer;
    return KernelCategory::kReduction;
  }
  static constexpr std::array<std::string_view, 12> kOther = {
      "sort", "scan", "search", "unique", "segment", "histogram", "spin", "bounds_check", "nonzero", "select_if",
      "compact", "topk"};
  if (contains_any(lb, kOther)) return KernelCategory::kOther;
  if (p.qualified.starts_with("cub::") || p.qualified.starts_with("at_cuda_detail::cub::")) {
    return contains(lb, "reduce") ? KernelCategory::kReduction : KernelCategory::kOther;
  }
  static constexpr std::array<std::string_view, 20> kReduction = {
      "reduce", "softmax", "layer_norm", "layernorm", "batch_norm", "batchnorm", "group_norm", "groupnorm", "rms_norm",
      "gammabeta", "moments", "nll_loss", "cross_entropy", "_pool", "welford", "embedding_backward", "grad_weight",
      "sum", "lpnorm", "grad_indice_weights"};
  if (contains_any(lb, kReduction) && !contains(lb, "normal")) return KernelCategory::kReduction;
  if (contains(lb, "qparam")) return KernelCategory::kReduction;  // Row-wise max for quantisation.
  return KernelCategory::kElementwise;
}

std::optional<KernelInfo> aten_kernel(const ParsedName& p) {
  const std::string_view q = p.qualified;
  KernelLibrary lib = KernelLibrary::kUnknown;
  if (q.starts_with("at::") || q.starts_with("c10::")) lib = KernelLibrary::kAten;
  else if (q.starts_with("at_cuda_detail::cub::") || q.starts_with("cub::") || q.starts_with("hipcub::")) lib = KernelLibrary::kCub;
  else if (q.starts_with("fbgemm_gpu::")) lib = KernelLibrary::kFbgemm;
  else {
    // ATen kernels outside at:: (anonymous-namespace softmax) and FBGEMM's free functions.
    static constexpr std::array<std::string_view, 4> kAtenFree = {"softmax_warp_forward", "softmax_warp_backward",
                                                                  "elementwise_kernel_with_index", "compute_cuda_kernel"};
    static constexpr std::array<std::string_view, 6> kFbgemmFree = {
        "split_embedding", "bounds_check_indices", "linearize_index", "permute_pooled_embs", "recat_copy", "dense_embedding"};
    if (starts_with_any(p.base, kAtenFree)) lib = KernelLibrary::kAten;
    else if (starts_with_any(p.base, kFbgemmFree)) lib = KernelLibrary::kFbgemm;
    else if (p.base == "multi_tensor_apply_kernel") lib = KernelLibrary::kUnknown;  // Apex, DeepSpeed.
    else return std::nullopt;
  }
  return KernelInfo{lib, aten_category(p), precision_of_types(p.idents)};
}

// Custom kernels: the words of the function's own name (camelCase and snake_case split), where
// substrings of long names would mislead ("Additive" is not "add").
KernelInfo custom_kernel(const ParsedName& p) {
  KernelInfo k{KernelLibrary::kUnknown, KernelCategory::kOther, precision_of_types(p.idents)};
  const std::vector<std::string> words = words_of(p.base);
  const auto has = [&](std::initializer_list<std::string_view> set) {
    return std::any_of(words.begin(), words.end(), [&](const std::string& w) {
      return std::find(set.begin(), set.end(), w) != set.end();
    });
  };
  if (has({"allreduce", "allgather", "reducescatter", "alltoall", "broadcast", "sendrecv"})) {
    k.category = KernelCategory::kCommunication;
  } else if (has({"attention", "attn", "flash", "fmha", "sdpa", "mha"})) {
    k.category = KernelCategory::kAttention;
  } else if (has({"gemm", "matmul", "mm", "bmm", "gemv", "sgemm", "hgemm", "dgemm", "wgmma", "mma"})) {
    k.category = KernelCategory::kGemm;
  } else if (has({"conv", "convolution", "conv2d", "conv3d"})) {
    k.category = KernelCategory::kConvolution;
  } else if (has({"adam", "adamw", "sgd", "adagrad", "optimizer"})) {
    k.category = KernelCategory::kOptimizer;
  } else if (has({"sum", "mean", "argmax", "argmin", "norm", "layernorm", "rmsnorm", "softmax", "reduce", "reduction"})) {
    k.category = KernelCategory::kReduction;
  } else if (has({"scale", "add", "mul", "sub", "div", "square", "sqrt", "exp", "log", "neg", "abs", "axpy", "bias",
                  "residual", "clamp", "tanh", "sigmoid", "saxpy", "sin", "cos", "pow", "max", "min", "silu", "gelu",
                  "relu", "elementwise", "copy", "fill", "cast", "dropout", "embedding", "gather", "scatter"})) {
    k.category = KernelCategory::kElementwise;
  }
  return k;
}

}  // namespace

std::string demangle_kernel_name(std::string_view name) {
  if (!name.starts_with("_Z")) return std::string(name);
  int status = 0;
  const std::string mangled(name);
  std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status), std::free);
  if (status != 0 || !out) return mangled;
  return std::string(out.get());
}

KernelInfo describe_kernel(std::string_view raw) {
  // Copy and set activities arrive under the kernel names profilers give them.
  if (raw.starts_with("Memcpy") || raw.starts_with("Memset") || raw.starts_with("memcpy") || raw.starts_with("memset")) {
    return KernelInfo{KernelLibrary::kUnknown, KernelCategory::kCopySet, Precision::kUnknown};
  }
  const ParsedName p = parse_name(raw);
  if (auto k = nccl_kernel(raw, p)) return *k;
  if (auto k = tensile_kernel(p)) return *k;
  if (auto k = nvjet_kernel(p)) return *k;
  if (auto k = triton_kernel(p)) return *k;
  if (auto k = attention_kernel(p)) return *k;
  if (auto k = cudnn_kernel(p)) return *k;
  if (auto k = cutlass_kernel(p)) return *k;
  if (auto k = nvidia_flat_kernel(p)) return *k;
  if (auto k = cublas_kernel(p)) return *k;
  if (auto k = miopen_kernel(p)) return *k;
  if (auto k = aten_kernel(p)) return *k;
  return custom_kernel(p);
}

KernelCategory classify_kernel(std::string_view name) { return describe_kernel(name).category; }

Precision precision_from_kernel_name(std::string_view name) { return describe_kernel(name).precision; }

std::string_view category_name(KernelCategory c) {
  switch (c) {
    case KernelCategory::kGemm: return "gemm";
    case KernelCategory::kConvolution: return "convolution";
    case KernelCategory::kAttention: return "attention";
    case KernelCategory::kElementwise: return "elementwise";
    case KernelCategory::kReduction: return "reduction_norm";
    case KernelCategory::kOptimizer: return "optimizer";
    case KernelCategory::kCopySet: return "copy_set";
    case KernelCategory::kCommunication: return "communication";
    case KernelCategory::kOther: return "other";
  }
  return "other";
}

std::string_view library_name(KernelLibrary l) {
  switch (l) {
    case KernelLibrary::kUnknown: return "unknown";
    case KernelLibrary::kCublas: return "cublas";
    case KernelLibrary::kCudnn: return "cudnn";
    case KernelLibrary::kCutlass: return "cutlass";
    case KernelLibrary::kFlashAttention: return "flash_attention";
    case KernelLibrary::kTriton: return "triton";
    case KernelLibrary::kNccl: return "nccl";
    case KernelLibrary::kTensile: return "tensile";
    case KernelLibrary::kMiopen: return "miopen";
    case KernelLibrary::kAten: return "aten";
    case KernelLibrary::kCub: return "cub";
    case KernelLibrary::kFbgemm: return "fbgemm";
  }
  return "unknown";
}

bool is_memory_bound(KernelCategory c) {
  return c == KernelCategory::kElementwise || c == KernelCategory::kReduction;
}

bool is_matrix_math(KernelCategory c) {
  return c == KernelCategory::kGemm || c == KernelCategory::kConvolution || c == KernelCategory::kAttention;
}

bool is_plain_softmax(std::string_view raw) {
  const std::string name = lower(raw);
  if (name.find("softmax") == std::string::npos) return false;
  static constexpr std::array<std::string_view, 6> kLoss = {"log_softmax", "logsoftmax", "nll", "cross_entropy",
                                                            "crossentropy", "triton_"};
  return !contains_any(name, kLoss) && classify_kernel(raw) != KernelCategory::kAttention;
}

std::string_view precision_name(Precision p) {
  switch (p) {
    case Precision::kUnknown: return "unknown";
    case Precision::kFp64: return "fp64";
    case Precision::kFp32: return "fp32";
    case Precision::kTf32: return "tf32";
    case Precision::kBf16: return "bf16";
    case Precision::kFp16: return "fp16";
    case Precision::kFp8: return "fp8";
    case Precision::kInt8: return "int8";
  }
  return "unknown";
}

Precision precision_from_dtype(std::string_view dtype) {
  if (dtype == "float" || dtype == "c10::complex<float>") return Precision::kFp32;
  if (dtype == "c10::BFloat16") return Precision::kBf16;
  if (dtype == "c10::Half") return Precision::kFp16;
  if (dtype == "double") return Precision::kFp64;
  if (contains(dtype, "Float8")) return Precision::kFp8;
  if (dtype == "signed char" || dtype == "unsigned char") return Precision::kInt8;
  return Precision::kUnknown;
}

namespace {
// Dense peak TFLOP/s (TOPS for int8) from the vendors' datasheets; sparse figures halved where
// the sheet gives only "with sparsity". 0: no hardware math of that type. AMD: fp32 and fp64 are
// the matrix-core rates, which exceed the vector rates on CDNA2/CDNA3.
constexpr std::array<PeakTable, 22> kPeaks = {{
    //  match        variant       arch         fp64  fp32   tf32    bf16    fp16    fp8     int8
    {"H200", "H200 SXM", "Hopper", 67, 67, 494.7, 989.4, 989.4, 1978.9, 1978.9, "NVIDIA H200 datasheet (SXM)"},
    {"H100 PCIe", "H100 PCIe", "Hopper", 51, 51, 378, 756, 756, 1513, 1513, "NVIDIA H100 datasheet (PCIe)"},
    {"H100 NVL", "H100 NVL", "Hopper", 60, 60, 417.5, 835, 835, 1670.5, 1670.5, "NVIDIA H100 datasheet (NVL)"},
    {"H100", "H100 SXM", "Hopper", 67, 67, 494.7, 989.4, 989.4, 1978.9, 1978.9, "NVIDIA H100 datasheet (SXM)"},
    {"H800", "H800 SXM", "Hopper", 1, 67, 494.7, 989.4, 989.4, 1978.9, 1978.9, "NVIDIA H800 (H100 SXM compute)"},
    {"GH200", "GH200", "Hopper", 67, 67, 494.7, 989.4, 989.4, 1978.9, 1978.9, "NVIDIA GH200 datasheet"},
    {"B200", "B200", "Blackwell", 40, 80, 1100, 2250, 2250, 4500, 4500, "NVIDIA HGX B200 datasheet (per GPU, dense)"},
    {"A100", "A100", "Ampere", 19.5, 19.5, 156, 312, 312, 0, 624, "NVIDIA A100 datasheet"},
    {"A800", "A800", "Ampere", 19.5, 19.5, 156, 312, 312, 0, 624, "NVIDIA A800 (A100 compute)"},
    {"L40S", "L40S", "Ada", 1.4, 91.6, 183, 362, 362, 733, 733, "NVIDIA L40S datasheet"},
    {"L4", "L4", "Ada", 0.5, 30.3, 60, 121, 121, 242.5, 242.5, "NVIDIA L4 datasheet"},
    {"A10", "A10", "Ampere", 0.98, 31.2, 62.5, 125, 125, 0, 250, "NVIDIA A10 datasheet"},
    // Volta: fp16 tensor cores only; no bf16, no TF32, no integer tensor math (DP4A only).
    {"V100-PCIE", "V100 PCIe", "Volta", 7, 14, 0, 0, 112, 0, 0, "NVIDIA V100 datasheet (PCIe)"},
    {"V100", "V100", "Volta", 7.8, 15.7, 0, 0, 125, 0, 0, "NVIDIA V100 datasheet (SXM2)"},
    {"T4", "T4", "Turing", 0.25, 8.1, 0, 0, 65, 0, 130, "NVIDIA T4 datasheet"},
    // AMD Instinct. CDNA2: matrix cores for fp64/fp32/fp16/bf16/int8, no TF32 or FP8.
    {"MI250X", "MI250X", "CDNA2", 95.7, 95.7, 0, 383, 383, 0, 383, "AMD Instinct MI250X datasheet (OAM)"},
    {"MI250", "MI250", "CDNA2", 90.5, 90.5, 0, 362.1, 362.1, 0, 362.1, "AMD Instinct MI250 datasheet (OAM)"},
    {"MI210", "MI210", "CDNA2", 45.3, 45.3, 0, 181, 181, 0, 181, "AMD Instinct MI210 datasheet"},
    // CDNA3: adds TF32 and FP8 (figures without sparsity).
    {"MI325X", "MI325X", "CDNA3", 163.4, 163.4, 653.7, 1307.4, 1307.4, 2614.9, 2614.9, "AMD Instinct MI325X datasheet"},
    {"MI300X", "MI300X", "CDNA3", 163.4, 163.4, 653.7, 1307.4, 1307.4, 2614.9, 2614.9, "AMD Instinct MI300X datasheet"},
    {"MI300A", "MI300A", "CDNA3", 122.6, 122.6, 490.3, 980.6, 980.6, 1961.2, 1961.2, "AMD Instinct MI300A datasheet"},
    {"MI300", "MI300X", "CDNA3", 163.4, 163.4, 653.7, 1307.4, 1307.4, 2614.9, 2614.9, "AMD Instinct MI300X datasheet"},
}};
}  // namespace

const PeakTable* find_peak_table(std::string_view device_name) {
  // A match must end at a word boundary so "A10" does not match "A100" or "A10G", nor "L4"
  // match "L40". More specific rows come first in the table.
  for (const auto& row : kPeaks) {
    for (size_t pos = device_name.find(row.match); pos != std::string_view::npos;
         pos = device_name.find(row.match, pos + 1)) {
      const size_t end = pos + row.match.size();
      if (end == device_name.size() || !std::isalnum(static_cast<unsigned char>(device_name[end]))) {
        return &row;
      }
    }
  }
  return nullptr;
}

std::optional<double> peak_tflops(std::string_view device_name, Precision p) {
  const PeakTable* row = find_peak_table(device_name);
  if (!row) return std::nullopt;
  double v = 0;
  switch (p) {
    case Precision::kFp64: v = row->fp64; break;
    case Precision::kFp32: v = row->fp32; break;
    case Precision::kTf32: v = row->tf32; break;
    case Precision::kBf16: v = row->bf16; break;
    case Precision::kFp16: v = row->fp16; break;
    case Precision::kFp8: v = row->fp8; break;
    case Precision::kInt8: v = row->int8; break;
    case Precision::kUnknown: return std::nullopt;
  }
  if (v <= 0) return std::nullopt;
  return v;
}

namespace {
struct MemoryBandwidth {
  std::string_view match;  // Substring of the device name (ends at a word boundary).
  std::string_view also;   // A second substring the name must contain; "" for none.
  double tbps;
};
// Datasheet peak memory bandwidth; more specific rows first.
constexpr std::array<MemoryBandwidth, 23> kMemoryBandwidth = {{
    {"GH200", "", 4.0},        {"H200", "", 4.8},        {"H100 PCIe", "", 2.0},
    {"H100 NVL", "", 3.9},     {"H100", "", 3.35},       {"H800", "", 3.35},
    {"B200", "", 8.0},         {"A100", "80GB", 2.0},    {"A100", "", 1.555},
    {"A800", "80GB", 2.0},     {"A800", "", 1.555},      {"L40S", "", 0.864},
    {"L4", "", 0.3},           {"A10", "", 0.6},         {"V100", "", 0.9},
    {"T4", "", 0.32},          {"MI325X", "", 6.0},
    {"MI300X", "", 5.3},       {"MI300A", "", 5.3},      {"MI300", "", 5.3},
    {"MI250X", "", 3.2},       {"MI250", "", 3.2},       {"MI210", "", 1.6},
}};

bool name_has_word(std::string_view name, std::string_view word) {
  for (size_t pos = name.find(word); pos != std::string_view::npos; pos = name.find(word, pos + 1)) {
    const size_t end = pos + word.size();
    if (end == name.size() || !std::isalnum(static_cast<unsigned char>(name[end]))) return true;
  }
  return false;
}
}  // namespace

std::optional<double> peak_memory_tbps(std::string_view device_name) {
  for (const auto& row : kMemoryBandwidth) {
    if (name_has_word(device_name, row.match) && (row.also.empty() || contains(device_name, row.also))) {
      return row.tbps;
    }
  }
  return std::nullopt;
}

std::optional<bool> device_supports(std::string_view device_name, Precision p) {
  if (p == Precision::kUnknown || !find_peak_table(device_name)) return std::nullopt;
  return peak_tflops(device_name, p).has_value();
}

std::optional<Precision> preferred_half_precision(std::string_view device_name) {
  if (!find_peak_table(device_name)) return std::nullopt;
  return device_supports(device_name, Precision::kBf16).value_or(false) ? Precision::kBf16 : Precision::kFp16;
}

bool is_amd_device(std::string_view device_name) {
  if (contains(device_name, "AMD") || contains(device_name, "Instinct") || contains(device_name, "Radeon")) return true;
  const PeakTable* row = find_peak_table(device_name);
  return row && row->arch.starts_with("CDNA");
}

}  // namespace gpuscope
