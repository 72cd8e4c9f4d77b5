// WaitForListener: waits until something accepts TCP connections at host:port, or a deadline —
// how a rank other than 0 waits for rank 0's rendezvous server with a bound it keeps.
//
// Why: LibTorch 2.11's TCPStore client retries a refused connection with a growing back-off
// and overshoots its own timeout by seconds (measured: a 2 s timeout returned after 2.7-5.5 s
// on a loaded 2-core machine); LibTorch 1.13's stops early instead. Waiting here first, on
// plain sockets, makes the deadline ours on both.
//
// Contract: resolves `host` (getaddrinfo, IPv4 or IPv6), then tries a non-blocking connect to
// every address, each attempt bounded by the time left (at most 1 s), every 50 ms until one
// is accepted (OK; the probe connection is closed at once) or `deadline` passes
// (DeadlineExceeded, naming host:port and the last error). A host that does not resolve is
// NotFound at once. Returns within ~50 ms after `deadline`.
//
// Example:
//   RETURN_IF_ERROR(WaitForListener("127.0.0.1", 29500, absl::Now() + absl::Seconds(30)));
#ifndef LOOM_BASE_WAIT_FOR_LISTENER_H_
#define LOOM_BASE_WAIT_FOR_LISTENER_H_

#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace loom::base {

absl::Status WaitForListener(const std::string& host, int port, absl::Time deadline);

}  // namespace loom::base

#endif  // LOOM_BASE_WAIT_FOR_LISTENER_H_
