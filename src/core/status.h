// Recoverable errors as values (no exceptions across library boundaries).
// A Status message is one user-facing line: what went wrong and where; callers prefix the
// file name. RETURN_IF_ERROR / ASSIGN_OR_RETURN keep call sites flat.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace gpuscope {

class Status {
 public:
  Status() = default;
  static Status error(std::string message) { return Status(std::move(message)); }
  bool ok() const { return !message_.has_value(); }
  const std::string& message() const {
    static const std::string kEmpty;
    return message_ ? *message_ : kEmpty;
  }

 private:
  explicit Status(std::string message) : message_(std::move(message)) {}
  std::optional<std::string> message_;
};

inline Status ok_status() { return Status(); }

template <typename T>
class StatusOr {
 public:
  StatusOr(T value) : v_(std::move(value)) {}         // NOLINT: implicit by design.
  StatusOr(Status status) : v_(std::move(status)) {}  // NOLINT: must not be ok.
  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  T& operator*() & { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace gpuscope

#define GPUSCOPE_CONCAT_INNER(a, b) a##b
#define GPUSCOPE_CONCAT(a, b) GPUSCOPE_CONCAT_INNER(a, b)

#define RETURN_IF_ERROR(expr)            \
  do {                                   \
    ::gpuscope::Status status_ = (expr); \
    if (!status_.ok()) return status_;   \
  } while (0)

#define ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                          \
  if (!tmp.ok()) return tmp.status();         \
  lhs = std::move(tmp).value()

#define ASSIGN_OR_RETURN(lhs, expr) ASSIGN_OR_RETURN_IMPL(GPUSCOPE_CONCAT(statusor_, __LINE__), lhs, expr)
