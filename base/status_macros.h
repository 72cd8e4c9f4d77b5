// Status propagation macros missing from Debian's abseil 20220623.
//
// Contract:
//   RETURN_IF_ERROR(expr)            `expr` yields absl::Status (or anything with .ok()
//                                    and convertible to absl::Status); returns it from the
//                                    enclosing function when not OK.
//   ASSIGN_OR_RETURN(lhs, expr)      `expr` yields absl::StatusOr<T>; on error returns the
//                                    status, otherwise move-assigns the value to `lhs`
//                                    (which may be a declaration: `auto x`, `const T& y`).
//   ASSIGN_OR_RETURN(lhs, expr, ctx) as above; on error the message is prefixed with
//                                    `ctx` (a string) and ": ", keeping the status code,
//                                    so errors carry context as they propagate.
//   RETURN_IF_ERROR_CTX(expr, ctx)   RETURN_IF_ERROR with the same prefixing.
//
// Example:
//   absl::StatusOr<Config> Load(const std::string& path) {
//     ASSIGN_OR_RETURN(std::string text, ReadFile(path), "reading " + path);
//     RETURN_IF_ERROR(Validate(text));
//     return Parse(text);
//   }
#ifndef LOOM_BASE_STATUS_MACROS_H_
#define LOOM_BASE_STATUS_MACROS_H_

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace loom::base {

// Returns `status` with `context + ": "` prefixed to its message; OK stays OK.
inline absl::Status Annotate(const absl::Status& status, absl::string_view context) {
  if (status.ok() || context.empty()) return status;
  return absl::Status(status.code(), absl::StrCat(context, ": ", status.message()));
}

namespace internal {
inline absl::Status AsStatus(absl::Status s) { return s; }
template <typename T>
absl::Status AsStatus(const absl::StatusOr<T>& s) {
  return s.status();
}
}  // namespace internal

}  // namespace loom::base

#define LOOM_STATUS_CONCAT_INNER_(a, b) a##b
#define LOOM_STATUS_CONCAT_(a, b) LOOM_STATUS_CONCAT_INNER_(a, b)

#define RETURN_IF_ERROR(expr)                                                           \
  do {                                                                                  \
    ::absl::Status loom_status_ = ::loom::base::internal::AsStatus(expr);               \
    if (!loom_status_.ok()) return loom_status_;                                        \
  } while (0)

#define RETURN_IF_ERROR_CTX(expr, ctx)                                                  \
  do {                                                                                  \
    ::absl::Status loom_status_ = ::loom::base::internal::AsStatus(expr);               \
    if (!loom_status_.ok()) return ::loom::base::Annotate(loom_status_, (ctx));         \
  } while (0)

#define LOOM_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr, ctx)                           \
  auto statusor = (expr);                                                               \
  if (!statusor.ok()) return ::loom::base::Annotate(statusor.status(), (ctx));          \
  lhs = std::move(statusor).value()

#define LOOM_ASSIGN_OR_RETURN_2_(lhs, expr) \
  LOOM_ASSIGN_OR_RETURN_IMPL_(LOOM_STATUS_CONCAT_(loom_statusor_, __LINE__), lhs, expr, "")
#define LOOM_ASSIGN_OR_RETURN_3_(lhs, expr, ctx) \
  LOOM_ASSIGN_OR_RETURN_IMPL_(LOOM_STATUS_CONCAT_(loom_statusor_, __LINE__), lhs, expr, ctx)
#define LOOM_ASSIGN_OR_RETURN_PICK_(_1, _2, _3, NAME, ...) NAME

// Parentheses around `expr` with commas are not needed: the macro counts arguments.
#define ASSIGN_OR_RETURN(...)                                                         \
  LOOM_ASSIGN_OR_RETURN_PICK_(__VA_ARGS__, LOOM_ASSIGN_OR_RETURN_3_,                  \
                              LOOM_ASSIGN_OR_RETURN_2_, unused)(__VA_ARGS__)

#endif  // LOOM_BASE_STATUS_MACROS_H_
