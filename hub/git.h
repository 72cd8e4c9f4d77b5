// Git: runs the `git` program (and through it git-lfs) in a folder, for //hub.
// Why the programs and not libgit2: a Hub model repository keeps its weights in Git LFS, which
// only git-lfs (a program, Debian's git-lfs) implements — libgit2 has no LFS — and both
// programs share git's credential-helper protocol, through which the token reaches them in
// memory.
//
// Contract:
//   - Run(args): `git args...` in the folder, its output (stdout and stderr together) and exit
//     code; the environment is this process's plus GIT_TERMINAL_PROMPT=0 (never a prompt),
//     LC_ALL=C, and, with a token, a credential helper given on the command line as code that
//     reads the token from the variable LOOM_HUB_GIT_TOKEN of git's own environment: the token
//     is never in any process's arguments (what `ps` and /proc/*/cmdline show), never in
//     .git/config, never in a URL, and every output that comes back has it replaced by
//     <HUB_TOKEN>.
//   - Check(args, what): Run, and an error naming `what`, the folder and git's (masked) output
//     when git fails or does not finish within the timeout (killed then).
//   - A missing git program is FailedPrecondition saying to install git and git-lfs.
//
// Example:
//   Git git("/out", token);
//   RETURN_IF_ERROR(git.Check({"push", "origin", "HEAD:main"}, "pushing"));
#ifndef LOOM_HUB_GIT_H_
#define LOOM_HUB_GIT_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace loom::hub {

struct GitResult {
  int exit_code = 0;
  std::string output;  // masked
};

class Git {
 public:
  Git(std::string folder, std::optional<std::string> token, int timeout_s = 3600)
      : folder_(std::move(folder)), token_(std::move(token)), timeout_s_(timeout_s) {}

  absl::StatusOr<GitResult> Run(const std::vector<std::string>& args) const;
  absl::StatusOr<std::string> Check(const std::vector<std::string>& args,
                                    const std::string& what) const;
  // `text` with the token replaced by <HUB_TOKEN>.
  std::string Mask(std::string text) const;
  const std::string& folder() const { return folder_; }

 private:
  std::string folder_;
  std::optional<std::string> token_;
  int timeout_s_;
};

}  // namespace loom::hub

#endif  // LOOM_HUB_GIT_H_
