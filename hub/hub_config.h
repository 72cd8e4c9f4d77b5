// Where --push_to_hub pushes and with which token (transformers 4.41 TrainingArguments
// `hub_model_id`, `hub_token`, `hub_private_repo`; `Trainer.init_hf_repo`).
//
// Contract:
//   - RemoteUrl(model_id, hub_url): a model_id that is a URL (has "://") or a local path
//     (starts with '/' or '.') is the remote as it is; "user/name" or "name" is hub_url +
//     "/" + model_id (the Hub's layout: https://huggingface.co/user/name). hub_url comes from
//     the environment (TrainingArguments has no such field, and loom adds none): LOOM_HUB_URL,
//     else HF_ENDPOINT (huggingface_hub's variable), else https://huggingface.co.
//     A URL carrying credentials (scheme://user:secret@host) is InvalidArgument: it would be
//     written into .git/config; the token goes in --hub_token / HF_TOKEN instead.
//   - ResolveHubToken(flag): --hub_token, else HF_TOKEN, else the file `huggingface-cli login`
//     writes ($HF_HOME/token, HF_HOME defaulting to ~/.cache/huggingface), trimmed; nullopt
//     when there is none. `source` says where it came from (for logs — never the token).
//   - DefaultModelId(output_dir): HF's default hub_model_id, the output folder's name.
//   - RedactUrlCredentials(text): every "scheme://userinfo@" in `text` with its userinfo
//     (user, password or token) replaced by "<credentials>", for anything that echoes arguments.
//
// Example:
//   ASSIGN_OR_RETURN(std::string url, RemoteUrl(args.hub_model_id(), HubUrlFromEnvironment()));
//   std::optional<HubToken> token = ResolveHubToken(args.hub_token());
#ifndef LOOM_HUB_HUB_CONFIG_H_
#define LOOM_HUB_HUB_CONFIG_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace loom::hub {

std::string HubUrlFromEnvironment();
// "user/name" or "name" (mapped under the hub URL), not a URL or a path.
bool IsHubRepoId(const std::string& model_id);
absl::StatusOr<std::string> RemoteUrl(const std::string& model_id, const std::string& hub_url);
std::string DefaultModelId(const std::string& output_dir);
std::string RedactUrlCredentials(const std::string& text);

struct HubToken {
  std::string token;
  std::string source;  // "--hub_token", "HF_TOKEN" or the token file's path
};
std::optional<HubToken> ResolveHubToken(const std::string& flag);

}  // namespace loom::hub

#endif  // LOOM_HUB_HUB_CONFIG_H_
