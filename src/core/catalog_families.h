// Internal to the kernel catalogue: the family recognisers describe_kernel tries in order. Each
// returns nullopt when the name is not one of its own.
#pragma once

#include <optional>
#include <string_view>

#include "core/catalog.h"
#include "core/catalog_parse.h"

namespace gpuscope::catalog_detail {

// Vendors' libraries (catalog_families.cpp).
std::optional<KernelInfo> nccl_kernel(std::string_view raw, const ParsedName& p);
std::optional<KernelInfo> tensile_kernel(const ParsedName& p);
std::optional<KernelInfo> nvjet_kernel(const ParsedName& p);
std::optional<KernelInfo> nvidia_flat_kernel(const ParsedName& p);
std::optional<KernelInfo> cutlass_kernel(const ParsedName& p);
std::optional<KernelInfo> attention_kernel(const ParsedName& p);
std::optional<KernelInfo> cudnn_kernel(const ParsedName& p);
std::optional<KernelInfo> cublas_kernel(const ParsedName& p);
std::optional<KernelInfo> miopen_kernel(const ParsedName& p);

// Frameworks and custom kernels (catalog_families_frameworks.cpp); custom_kernel always answers.
std::optional<KernelInfo> triton_kernel(const ParsedName& p);
std::optional<KernelInfo> aten_kernel(const ParsedName& p);
KernelInfo custom_kernel(const ParsedName& p);

}  // namespace gpuscope::catalog_detail
