// Memoises a pure function of an interned string by StringId. Traces hold millions of events
// but few distinct names, and classifying a long demangled kernel name is costly.
#pragma once

#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "core/trace.h"

namespace gpuscope {

template <typename T, typename F>
class NameCache {
 public:
  NameCache(const StringTable& strings, F fn) : strings_(strings), fn_(std::move(fn)) {}
  const T& operator()(StringId id) {
    if (id >= values_.size()) values_.resize(strings_.size());
    auto& slot = values_[id];
    if (!slot) slot = fn_(strings_.view(id));
    return *slot;
  }

 private:
  const StringTable& strings_;
  F fn_;
  std::vector<std::optional<T>> values_;
};

}  // namespace gpuscope
