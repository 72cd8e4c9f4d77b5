// Drives python_interop_test.sh: the C++ half of the round trip with Python torch.
//
//   rng_interop_tool write DIR  seeds, advances and captures every generator, saves
//                               DIR/rng_state.pth, then writes the reference draws made after
//                               the capture (DIR/cpp_draws.txt) and after SetSeed(42)
//                               (DIR/cpp_seed42_draws.txt) for check_rng_state.py; the same
//                               state also as Accelerator::SaveState writes it
//                               (DIR/random_states_0.pkl, accelerate's keys).
//   rng_interop_tool read DIR   loads DIR/py_rng_state.pth (written by check_rng_state.py with
//                               Python's torch.get_rng_state()) and DIR/py_hf_rng_state.pth
//                               (the same state in HF Trainer's own layout), restores each and
//                               checks the draws against DIR/py_draws.txt.
// Exit status 0 on success; otherwise a message on stderr.
#include <torch/types.h>

#include <cstdio>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "checkpoint/rng_state_file.h"
#include "logging/process_logging.h"
#include "rng/host_generator.h"
#include "rng/rng_state.h"
#include "rng/seed.h"
#include "tests/rng/reference_draws.h"

namespace loom::rng::testing {
namespace {

absl::Status Write(const std::string& dir) {
  GeneratorSet host;
  RETURN_IF_ERROR(SetSeed(1234, &host));
  for (const char* name : {"sampler", "augment"}) (*host.Get(name))();
  DrawAllReference();
  torch::randn({1});  // Leave a cached normal sample in the generator state.
  ASSIGN_OR_RETURN(const RngState state, CaptureRngState(host));
  RETURN_IF_ERROR(checkpoint::SaveRngState(state, dir + "/" + checkpoint::RngStateFileName(0, 1)));
  RETURN_IF_ERROR(checkpoint::SaveRngState(state, dir + "/random_states_0.pkl",
                                           checkpoint::RngFileOptions{.accelerate_keys = true}));
  RETURN_IF_ERROR(
      base::WriteFileAtomically(dir + "/cpp_draws.txt", FormatDraws(DrawAllReference())));
  RETURN_IF_ERROR(SetSeed(42, &host));
  return base::WriteFileAtomically(dir + "/cpp_seed42_draws.txt", FormatDraws(DrawAllReference()));
}

absl::Status ReadOne(const std::string& dir, const std::string& file) {
  GeneratorSet host;
  RETURN_IF_ERROR(SetSeed(5, &host));
  ASSIGN_OR_RETURN(const RngState state, checkpoint::LoadRngState(dir + "/" + file));
  RETURN_IF_ERROR(RestoreRngState(state, &host));
  const DrawList actual = DrawAllReference();
  ASSIGN_OR_RETURN(const std::string text, base::ReadFile(dir + "/py_draws.txt"));
  ASSIGN_OR_RETURN(const DrawList expected, ParseDraws(text));
  if (std::string diff = CompareDraws(expected, actual); !diff.empty()) {
    return absl::InternalError(
        absl::StrCat("draws after restoring Python's torch.get_rng_state() from ", file,
                     " differ from Python's: ", diff));
  }
  return absl::OkStatus();
}

absl::Status Read(const std::string& dir) {
  RETURN_IF_ERROR(ReadOne(dir, "py_rng_state.pth"));
  return ReadOne(dir, "py_hf_rng_state.pth");
}

}  // namespace
}  // namespace loom::rng::testing

int main(int argc, char** argv) {
  loom::logging::InitProcessLogging(argv[0]);
  const std::string mode = argc == 3 ? argv[1] : "";
  absl::Status status;
  if (mode == "write") {
    status = loom::rng::testing::Write(argv[2]);
  } else if (mode == "read") {
    status = loom::rng::testing::Read(argv[2]);
  } else {
    std::fprintf(stderr, "usage: %s write|read DIR\n", argv[0]);
    return 2;
  }
  if (!status.ok()) {
    std::fprintf(stderr, "rng_interop_tool %s: %s\n", mode.c_str(), status.ToString().c_str());
    return 1;
  }
  std::printf("rng_interop_tool %s: OK\n", mode.c_str());
  return 0;
}
