// aio_bench: DeepSpeed's aio benchmark idea for loom's engine (DeepSpeed's docs say to tune the
// `aio` section per machine) — sweeps block_size x queue_depth x thread_count
// for reads and writes of one file in a folder on the disk that will hold nvme_path, prints
// the rates, the raw O_DIRECT (dd-like) baseline, and the best `aio` section to paste into the
// DeepSpeed config.
//
//   bazel run -c opt //tools:aio_bench -- --folder /local_nvme
//   bazel run -c opt //tools:aio_bench -- --folder /local_nvme --bytes 1GB \
//       --block_sizes 262144,1048576 --queue_depths 8,32 --thread_counts 1,2,4
#include <gflags/gflags.h>

#include <optional>

#include "base/tool_flags.h"

#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "aio/aio_bench.h"
#include "checkpoint/shard_size.h"

DEFINE_string(folder, "", "folder on the disk to measure (required; a file is written there and "
                          "removed)");
DEFINE_string(bytes, "256MB", "size of the file each measurement writes and reads (e.g. 1GB)");
DEFINE_string(block_sizes, "131072,262144,1048576,4194304", "aio block_size values to try");
DEFINE_string(queue_depths, "4,8,16,32", "aio queue_depth values to try");
DEFINE_string(thread_counts, "1,2", "aio thread_count (intra_op_parallelism) values to try");
DEFINE_int32(repeats, 2, "runs per point (the best counts)");

namespace {

bool ParseList(const std::string& flag, const std::string& text, std::vector<int64_t>* out) {
  out->clear();
  for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    int64_t v = 0;
    if (!absl::SimpleAtoi(part, &v) || v <= 0) {
      std::cerr << "aio_bench: --" << flag << ": '" << part << "' is not a positive integer\n";
      return false;
    }
    out->push_back(v);
  }
  if (out->empty()) std::cerr << "aio_bench: --" << flag << " is empty\n";
  return !out->empty();
}

}  // namespace

int main(int argc, char** argv) {
  if (std::optional<int> exit_code = loom::base::ParseToolFlags(
          &argc, &argv,
          "Sweeps aio block_size x queue_depth x thread_count on a folder and prints the best aio "
          "section for a DeepSpeed config.\n  aio_bench --folder /local_nvme [--bytes 256MB]",
          "tools/aio_bench.cc")) {
    return *exit_code;
  }
  if (argc > 1 || FLAGS_folder.empty()) {
    std::cerr << "aio_bench: --folder is required (and takes no other arguments; --help lists "
                 "the flags)\n";
    return 2;
  }
  loom::aio::SweepOptions o;
  o.folder = FLAGS_folder;
  o.repeats = FLAGS_repeats;
  absl::StatusOr<uint64_t> bytes = loom::checkpoint::ParseShardSize(FLAGS_bytes);
  if (!bytes.ok() || *bytes == 0) {
    std::cerr << "aio_bench: --bytes: '" << FLAGS_bytes << "' is not a size such as 256MB\n";
    return 2;
  }
  o.bytes = static_cast<int64_t>(*bytes);
  if (!ParseList("block_sizes", FLAGS_block_sizes, &o.block_sizes) ||
      !ParseList("queue_depths", FLAGS_queue_depths, &o.queue_depths) ||
      !ParseList("thread_counts", FLAGS_thread_counts, &o.thread_counts) || o.repeats < 1) {
    return 2;
  }
  absl::StatusOr<loom::aio::SweepResult> r = loom::aio::Sweep(o);
  if (!r.ok()) {
    std::cerr << "aio_bench: " << r.status().message() << "\n";
    return 1;
  }
  const int64_t block = r->Best().options.block_size;
  absl::StatusOr<loom::aio::Rates> raw =
      loom::aio::RawDirectRates(o.folder, o.bytes, block, o.repeats);
  absl::StatusOr<loom::aio::Rates> dd =
      loom::aio::RawDirectRates(o.folder, o.bytes, block, o.repeats, /*reuse_block=*/true);
  if (!raw.ok() || !dd.ok()) {
    std::cerr << "aio_bench: " << (raw.ok() ? dd.status() : raw.status()).message() << "\n";
    return 1;
  }
  std::cout << "aio_bench: " << o.folder << ", " << o.bytes << " bytes per run, "
            << (r->direct ? "O_DIRECT" : "buffered I/O (the filesystem takes no O_DIRECT)")
            << "\n"
            << r->Table()
            << "raw O_DIRECT loop, one request of the best block_size at a time, same bytes: read "
            << raw->read / 1e9 << " GB/s, write " << raw->write / 1e9 << " GB/s\n"
            << "  (dd-style, one reused block buffer: read " << dd->read / 1e9 << " GB/s, write "
            << dd->write / 1e9 << " GB/s)\n"
            << "best (harmonic mean of read and write):\n"
            << r->BestAioSection() << "\n";
  return 0;
}
