// PeerCheck: after a collective fails (a timeout or a lost connection), which peers are still
// answering. Gloo's own errors say "Timed out waiting 10000ms for recv" or "Connection closed
// by peer [127.0.0.1]:40123" and never which rank is at fault; a rank that was stopped
// (SIGSTOP, a debugger), hangs outside collectives or was cut off does not fail at all, so
// its peers are the only ones who can name it.
//
// Contract: UnresponsivePeers(pg, grace) writes "this rank failed" into the group's store (under
// a key that counts this process's failures: every rank of a group fails together, so the
// counts agree) and
// waits up to `grace` for every other rank to do the same (a rank whose collective failed
// reports within moments of this one, since they fail on the same timeout or connection). It
// returns a sentence for the error message:
//   - "every other rank saw the failure too" when all reported;
//   - "rank(s) 1, 3 did not report the failure within 2s: stopped, hung, dead or cut off"
//     otherwise;
//   - "the rendezvous store (hosted by rank 0) does not answer either: rank 0 is stopped, hung
//     or unreachable, or this rank is cut off" when the store does not answer within `grace`
//     plus one second (the store lives in rank 0's process).
// It never blocks longer than `grace` + 1 s: the store is talked to on a helper thread, left
// behind (detached) when it hangs — the caller is about to report a failed collective and end.
// A group of one has no peers ("").
//
// Example (collectives.cc's CollectiveFailure):
//   absl::StrCat(gloo_message, "; ", UnresponsivePeers(pg, absl::Seconds(2)))
#ifndef LOOM_DISTRIBUTED_PEER_CHECK_H_
#define LOOM_DISTRIBUTED_PEER_CHECK_H_

#include <string>

#include "absl/time/time.h"
#include "distributed/process_group.h"

namespace loom::distributed {

std::string UnresponsivePeers(const ProcessGroup& pg, absl::Duration grace);

}  // namespace loom::distributed

#endif  // LOOM_DISTRIBUTED_PEER_CHECK_H_
