// The Hub's repository API: HF's create_repo(repo_id, token, private, exist_ok=True), which
// Trainer.init_hf_repo calls for --push_to_hub (transformers 4.41), over libcurl
// (Debian's libcurl4-openssl-dev: HTTP and HTTPS without writing a client here).
//
// Contract:
//   - CreateRepo(hub_url, repo_id, token, private_repo): POST <hub_url>/api/repos/create with
//     {"name", "organization" (the part before '/'), "private"} and the token as a Bearer
//     header (in memory only; never in a URL, a log or an error). kCreated (HTTP 200, with
//     the "url" the server answered), kExists (409: exist_ok), kNoApi (404 / 405: a plain git
//     server; the caller decides what hub_private_repo then means). 401 / 403 is PermissionDenied naming the server and
//     the token's flag (not the token); an unreachable server Unavailable; anything else
//     Unknown with the status code.
//
// Example:
//   ASSIGN_OR_RETURN(CreatedRepo o,
//                    CreateRepo("https://huggingface.co", "me/model", token, /*private=*/true));
#ifndef LOOM_HUB_HUB_API_H_
#define LOOM_HUB_HUB_API_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace loom::hub {

enum class CreateRepoOutcome { kCreated, kExists, kNoApi };

struct CreatedRepo {
  CreateRepoOutcome outcome = CreateRepoOutcome::kNoApi;
  // The repository's URL as the server answered it (HF's RepoUrl: a name without a namespace
  // comes back under the token's user); empty when the server gave none.
  std::string url;
};

absl::StatusOr<CreatedRepo> CreateRepo(const std::string& hub_url,
                                             const std::string& repo_id,
                                             const std::optional<std::string>& token,
                                             bool private_repo, long timeout_s = 60);

}  // namespace loom::hub

#endif  // LOOM_HUB_HUB_API_H_
