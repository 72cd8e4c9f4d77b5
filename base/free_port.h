// PickFreePort: a TCP port that is free on this machine right now — the rendezvous port of
// torchrun's --standalone, accelerate's notebook_launcher, and of tests and tools that fork
// their own ranks (the one such function in loom).
//
// Contract: binds 127.0.0.1:0, reads the port the kernel chose and closes the socket. Another
// process may take the port before the ranks bind it (torchrun has the same race). An error
// (Unavailable) says why no port could be had.
//
// Example:
//   ASSIGN_OR_RETURN(int port, PickFreePort());
#ifndef LOOM_BASE_FREE_PORT_H_
#define LOOM_BASE_FREE_PORT_H_

#include "absl/status/statusor.h"

namespace loom::base {

absl::StatusOr<int> PickFreePort();

}  // namespace loom::base

#endif  // LOOM_BASE_FREE_PORT_H_
