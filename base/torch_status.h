// Converting exceptions thrown by LibTorch (c10::Error and other std::exceptions) into
// absl::Status at loom's boundary (any loom library that calls LibTorch).
//
// Contract: the message is "<context>: <what>", where <what> is c10::Error's message without
// its C++ backtrace (or std::exception::what()).
//
// Example:
//   try {
//     gen.set_state(t);
//   } catch (const std::exception& e) {
//     return TorchErrorToStatus(e, absl::StatusCode::kInvalidArgument, "rng/rng_state.cc");
//   }
#ifndef LOOM_BASE_TORCH_STATUS_H_
#define LOOM_BASE_TORCH_STATUS_H_

#include <c10/util/Exception.h>

#include <exception>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace loom::base {

// The exception's message, without c10::Error's backtrace.
inline std::string TorchErrorMessage(const std::exception& e) {
  if (const auto* c10_error = dynamic_cast<const c10::Error*>(&e)) {
    return c10_error->what_without_backtrace();
  }
  return e.what();
}

inline absl::Status TorchErrorToStatus(const std::exception& e, absl::StatusCode code,
                                       absl::string_view context) {
  return absl::Status(code, absl::StrCat(context, ": ", TorchErrorMessage(e)));
}

}  // namespace loom::base

#endif  // LOOM_BASE_TORCH_STATUS_H_
