#include "distributed/peer_check.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"

namespace loom::distributed {
namespace {

// Keyed by this process's count of failures too, so a later failure in the same group never
// reads an earlier one's reports.
std::atomic<int> g_failures{0};
std::string FailedKey(int failure, int rank) {
  return absl::StrCat("loom/collective_failed/", failure, "/", rank);
}

// What the helper thread found: the silent ranks, or nothing when the store did not answer.
struct Report {
  std::mutex mu;
  std::condition_variable done_cv;
  bool done = false;
  std::optional<std::vector<int>> silent;
};

void AskTheStore(c10::intrusive_ptr<::c10d::Store> store, int failure, int rank, int world,
                 absl::Duration grace, std::shared_ptr<Report> report) {
  std::optional<std::vector<int>> silent;
  try {
    store->set(FailedKey(failure, rank), std::vector<uint8_t>{1});
    const absl::Time deadline = absl::Now() + grace;
    for (;;) {
      std::vector<int> missing;
      for (int p = 0; p < world; ++p) {
        if (p != rank && !store->check({FailedKey(failure, p)})) missing.push_back(p);
      }
      if (missing.empty() || absl::Now() >= deadline) {
        silent = std::move(missing);
        break;
      }
      absl::SleepFor(absl::Milliseconds(50));
    }
  } catch (const std::exception&) {
    silent.reset();  // the store failed: same report as one that hangs
  }
  std::lock_guard<std::mutex> lock(report->mu);
  report->silent = std::move(silent);
  report->done = true;
  report->done_cv.notify_all();
}

}  // namespace

std::string UnresponsivePeers(const ProcessGroup& pg, absl::Duration grace) {
  if (pg.world_size() <= 1) return "";
  auto report = std::make_shared<Report>();
  std::thread(AskTheStore, pg.store_ptr(), g_failures++, pg.rank(), pg.world_size(), grace, report)
      .detach();
  std::unique_lock<std::mutex> lock(report->mu);
  const auto wait = std::chrono::milliseconds(absl::ToInt64Milliseconds(grace + absl::Seconds(1)));
  if (!report->done_cv.wait_for(lock, wait, [&] { return report->done; }) ||
      !report->silent.has_value()) {
    return "the rendezvous store (hosted by rank 0) does not answer either: rank 0 is stopped, "
           "hung or unreachable, or this rank is cut off";
  }
  if (report->silent->empty()) return "every other rank saw the failure too";
  return absl::StrCat(report->silent->size() == 1 ? "rank " : "ranks ",
                      absl::StrJoin(*report->silent, ", "), " did not report the failure within ",
                      absl::FormatDuration(grace), ": stopped, hung, dead or cut off");
}

}  // namespace loom::distributed
