// zero_to_fp32_memory: the peak memory of //tools:zero_to_fp32 consolidating a checkpoint of
// 268M fp32 parameters, against the size of its output:
//
//   ./bazelw run -c opt //benchmarks:zero_to_fp32_memory
//
// A ZeRO-2 checkpoint of 2 ranks in DeepSpeed's layout (sharding/deepspeed_checkpoint/zero_checkpoint.h: the model
// states with the full module, and per rank the fp32 partition with AdamW's two moments — about
// 4 GB on disk) is written by a child process, then the tool is run as a separate process
// (its peak resident set from wait4's rusage) writing model.safetensors and pytorch_model.bin.
// The tool's fixed cost (LibTorch loaded: ~0.16 GiB) is part of the peak; at 201M parameters
// (12 tensors) the ratio was 1.203x, at 268M it is lower.
// DeepSpeed's zero_to_fp32.py needs about 2x the output (DeepSpeed's docs): it loads every
// partition, then concatenates them. loom's reads each parameter's pieces straight from the
// files into the output tensors (checkpoint/lazy_torch_save.h) and streams both formats out.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "checkpoint/named_tensors.h"
#include "logging/process_logging.h"
#include "sharding/deepspeed_checkpoint/zero_checkpoint.h"

namespace {

constexpr int kTensors = 16;
constexpr int64_t kRows = 4096, kCols = 4096;  // 16.8M elements each: 268M in all
constexpr int kWorld = 2;

int WriteCheckpoint(const std::string& folder) {
  using loom::sharding::ZeroGroupLayout;
  const std::string dir = folder + "/global_step1";
  std::filesystem::create_directories(dir);
  ZeroGroupLayout layout;
  loom::checkpoint::NamedTensors module;
  for (int i = 0; i < kTensors; ++i) {
    const std::string name = absl::StrCat("layers.", i, ".weight");
    layout.names.push_back(name);
    layout.shapes.push_back({kRows, kCols});
    layout.numel += kRows * kCols;
    module.push_back({name, at::full({kRows, kCols}, static_cast<float>(i))});
  }
  const int64_t padded = loom::sharding::ZeroAlignedNumel(layout.numel, kWorld);
  loom::sharding::ZeroFilesInfo info = loom::sharding::MakeZeroFilesInfo(
      2, 0, kWorld, 1, 8, c10::IValue(), nlohmann::ordered_json::object(), 1.0);
  if (!loom::sharding::WriteZeroModelStates(dir + "/" + loom::sharding::kZeroModelStatesFile,
                                            module, {}, {layout}, {}, info)
           .ok()) {
    return 1;
  }
  at::Tensor flat = at::empty({padded});
  {
    int64_t offset = 0;
    for (const auto& [name, t] : module) {
      flat.slice(0, offset, offset + t.numel()).copy_(t.reshape({-1}));
      offset += t.numel();
    }
    flat.slice(0, offset).zero_();
  }
  module.clear();
  const int64_t part = padded / kWorld;
  for (int r = 0; r < kWorld; ++r) {
    info.rank = r;
    at::Tensor mine = flat.slice(0, r * part, (r + 1) * part).clone();
    c10::impl::GenericDict state(c10::IntType::get(), c10::AnyType::get());
    c10::impl::GenericDict entry(c10::StringType::get(), c10::AnyType::get());
    entry.insert("step", at::full({}, 1.0f));
    entry.insert("exp_avg", at::zeros({part}));
    entry.insert("exp_avg_sq", at::zeros({part}));
    state.insert(int64_t{0}, entry);
    c10::impl::GenericDict group(c10::StringType::get(), c10::AnyType::get());
    group.insert("lr", 1e-3);
    c10::impl::GenericList params(c10::AnyType::get());
    params.push_back(int64_t{0});
    group.insert("params", params);
    c10::impl::GenericList groups(c10::AnyType::get());
    groups.push_back(group);
    c10::impl::GenericDict base(c10::StringType::get(), c10::AnyType::get());
    base.insert("state", state);
    base.insert("param_groups", groups);
    if (!loom::sharding::WriteZeroOptimStates(
             dir + "/" + loom::sharding::ZeroOptimStatesFile(r, false), {mine}, {layout}, base,
             info)
             .ok()) {
      return 1;
    }
  }
  std::FILE* latest = std::fopen((folder + "/latest").c_str(), "w");
  if (latest == nullptr) return 1;
  std::fputs("global_step1", latest);
  std::fclose(latest);
  return 0;
}

// Runs argv; returns its peak resident set in bytes, or -1.
int64_t PeakRss(const std::vector<std::string>& argv) {
  const pid_t pid = fork();
  if (pid == 0) {
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    const int null = ::open("/dev/null", O_WRONLY);
    if (null >= 0) ::dup2(null, 1);
    execv(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  struct rusage usage {};
  if (wait4(pid, &status, 0, &usage) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return -1;
  }
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;
}

}  // namespace

int main(int argc, char** argv) {
  loom::logging::InitProcessLogging(argv[0]);
  const char* runfiles = std::getenv("RUNFILES_DIR");
  const std::string tool = runfiles != nullptr
                               ? std::string(runfiles) + "/loom/tools/zero_to_fp32"
                               : std::string(argv[0]) + ".runfiles/loom/tools/zero_to_fp32";
  const std::string folder = absl::StrCat("/tmp/loom_z2f_memory_", getpid());
  const pid_t writer = fork();
  if (writer == 0) _exit(WriteCheckpoint(folder));
  int status = 0;
  if (waitpid(writer, &status, 0) != writer || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "zero_to_fp32_memory: writing the checkpoint failed\n");
    return 1;
  }
  const double gib = 1024.0 * 1024.0 * 1024.0;
  std::printf("checkpoint: ZeRO-2, %d ranks, %d x [%ld, %ld] fp32 = %.1fM parameters\n", kWorld,
              kTensors, static_cast<long>(kRows), static_cast<long>(kCols),
              kTensors * kRows * kCols / 1e6);
  const int64_t idle = PeakRss({tool, "--help"});
  std::printf("  the tool's own resident set (--help, LibTorch loaded): %.2f GiB\n", idle / gib);
  for (const char* out : {"model.safetensors", "pytorch_model.bin"}) {
    const std::string path = folder + "/" + out;
    const int64_t peak = PeakRss({tool, folder, path});
    struct stat st {};
    if (peak < 0 || ::stat(path.c_str(), &st) != 0) {
      std::fprintf(stderr, "zero_to_fp32_memory: the tool failed writing %s\n", out);
      return 1;
    }
    std::printf(
        "  %-18s output %.2f GiB, peak resident %.2f GiB = %.3fx the output (DeepSpeed's "
        "method: about 2x)\n",
        out, st.st_size / gib, peak / gib, static_cast<double>(peak) / st.st_size);
  }
  std::filesystem::remove_all(folder);
  return 0;
}
