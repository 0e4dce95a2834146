// Internal to the kernel catalogue (catalog*.cpp): a kernel name taken apart and the small text
// helpers the family recognisers share. Not part of the core's API; include catalog.h instead.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "core/catalog.h"

namespace gpuscope::catalog_detail {

inline bool contains(std::string_view haystack, std::string_view needle) {
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

std::string lower(std::string_view s);

// Splits on '_': "nvjet_sm90_tst_128x128" -> {"nvjet", "sm90", "tst", "128x128"}.
std::vector<std::string_view> underscore_tokens(std::string_view s);

// The words of a function's own name, lowercased: "AddC" -> {"add", "c"}, "bias_add_kernel" ->
// {"bias", "add", "kernel"}.
std::vector<std::string> words_of(std::string_view name);

// A kernel name taken apart: the function's qualified name, its last component, the text of
// its template arguments, and every identifier in the whole name.
struct ParsedName {
  std::string text;       // Demangled where it was mangled; "(anonymous namespace)::" removed.
  std::string qualified;  // "at::native::reduce_kernel"
  std::string base;       // "reduce_kernel"
  std::string args;       // Template arguments of the function, without the outer <>.
  std::vector<std::string> idents;
};

// Demangles where needed and takes the name apart; truncated mangled names give identifiers only.
ParsedName parse_name(std::string_view raw);

// The narrowest precision among the type identifiers of a name, or kUnknown.
Precision precision_of_types(const std::vector<std::string>& idents);

// The type of a short dtype token in library names: "bf16", "f16", "fp16", "f32", "tf32", "e4m3".
Precision token_precision(std::string_view tok);

// Precision of a cuBLAS / CUTLASS instance name ("ampere_sgemm_128x64_nn") on SM version sm.
Precision blas_instance_precision(std::string_view name, int sm);

// The SM version a name states: "sm80_", "cutlass_80_", "ampere_"; 0 when none.
int sm_of(std::string_view name);

bool has_ident(const ParsedName& p, std::string_view id);
bool any_ident_contains(const ParsedName& p, std::string_view part);

}  // namespace gpuscope::catalog_detail
