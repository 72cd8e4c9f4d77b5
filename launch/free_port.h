// A TCP port that is free on this machine right now (for torchrun's --standalone).
//
// Contract: binds 127.0.0.1:0, reads the port the kernel chose and closes the socket. Another
// process may take the port before the ranks bind it (torchrun has the same race).
//
// Example:
//   ASSIGN_OR_RETURN(int port, PickFreePort());
#ifndef LOOM_LAUNCH_FREE_PORT_H_
#define LOOM_LAUNCH_FREE_PORT_H_

#include "absl/status/statusor.h"

namespace loom::launch {

absl::StatusOr<int> PickFreePort();

}  // namespace loom::launch

#endif  // LOOM_LAUNCH_FREE_PORT_H_
