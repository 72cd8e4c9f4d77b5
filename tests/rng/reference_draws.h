// The reference draw recipe shared by loom's C++ RNG tests and the Python scripts beside this
// file (reference_draws.py holds the same recipe; keep the two in step). Each named draw runs
// one LibTorch CPU sampler on the default generator, so comparing draws compares generator
// states and sampling algorithms with Python torch 1.13.
//
// Contract:
//   - ReferenceDrawNames() lists the draws in recipe order; DrawReference(name) performs one
//     (InvalidArgument for an unknown name); DrawAllReference() performs all, in order.
//   - Values are doubles (exact for float32 and int64 samples below 2^53).
//   - FormatDraws/ParseDraws use one line per draw, "name v1 v2 ...", values printed with %.17g
//     so they round-trip exactly; ParseDraws returns InvalidArgument on a malformed line.
//
// Example:
//   DrawList d = DrawAllReference();
//   RETURN_IF_ERROR(base::WriteFileAtomically(path, FormatDraws(d)));
#ifndef LOOM_TESTS_RNG_REFERENCE_DRAWS_H_
#define LOOM_TESTS_RNG_REFERENCE_DRAWS_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace loom::rng::testing {

using DrawList = std::vector<std::pair<std::string, std::vector<double>>>;

std::vector<std::string> ReferenceDrawNames();
absl::StatusOr<std::vector<double>> DrawReference(absl::string_view name);
DrawList DrawAllReference();

std::string FormatDraws(const DrawList& draws);
absl::StatusOr<DrawList> ParseDraws(absl::string_view text);

// "" when equal, else a description of the first difference.
std::string CompareDraws(const DrawList& expected, const DrawList& actual);

}  // namespace loom::rng::testing

#endif  // LOOM_TESTS_RNG_REFERENCE_DRAWS_H_
