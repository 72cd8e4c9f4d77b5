#include "hub/hub_config.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace loom::hub {

std::string HubUrlFromEnvironment() {
  // LOOM_HUB_URL, else huggingface_hub's own HF_ENDPOINT, else the Hub.
  std::string out = "https://huggingface.co";
  for (const char* name : {"HF_ENDPOINT", "LOOM_HUB_URL"}) {
    const char* url = std::getenv(name);
    if (url != nullptr && *url != '\0') out = url;
  }
  while (!out.empty() && out.back() == '/') out.pop_back();
  return out;
}

bool IsHubRepoId(const std::string& model_id) {
  return !model_id.empty() && model_id.find("://") == std::string::npos && model_id[0] != '/' &&
         model_id[0] != '.';
}

std::string RedactUrlCredentials(const std::string& text) {
  std::string out;
  size_t pos = 0;
  while (true) {
    const size_t scheme = text.find("://", pos);
    if (scheme == std::string::npos) break;
    const size_t start = scheme + 3;
    const size_t end = text.find_first_of("/?# \t\n\"'", start);
    const size_t at = text.rfind('@', end == std::string::npos ? std::string::npos : end - 1);
    out.append(text, pos, start - pos);
    if (at != std::string::npos && at >= start && (end == std::string::npos || at < end)) {
      out.append("<credentials>");
      pos = at;  // the '@' and the host stay
    } else {
      pos = start;
    }
  }
  out.append(text, pos, std::string::npos);
  return out;
}

absl::StatusOr<std::string> RemoteUrl(const std::string& model_id, const std::string& hub_url) {
  if (model_id.empty()) return absl::InvalidArgumentError("--hub_model_id: empty");
  std::string url;
  if (!IsHubRepoId(model_id)) {
    url = model_id;
  } else {
    url = absl::StrCat(hub_url, "/", model_id);
  }
  const size_t scheme = url.find("://");
  if (scheme != std::string::npos) {
    const size_t host_end = url.find('/', scheme + 3);
    const std::string authority = url.substr(scheme + 3, host_end == std::string::npos
                                                             ? std::string::npos
                                                             : host_end - scheme - 3);
    if (authority.find('@') != std::string::npos) {
      return absl::InvalidArgumentError(
          "--hub_model_id / LOOM_HUB_URL: the remote URL carries credentials, which would be "
          "written into .git/config; give the URL without them and the token with --hub_token "
          "or HF_TOKEN");
    }
  }
  return url;
}

std::string DefaultModelId(const std::string& output_dir) {
  // HF: Path(output_dir).absolute().name ("out/" and "./out" are "out"; "." is the cwd's name).
  std::error_code ec;
  std::filesystem::path p = std::filesystem::absolute(output_dir, ec).lexically_normal();
  while (!p.empty() && p.filename().empty() && p != p.root_path()) p = p.parent_path();
  return p.filename().string();
}

std::optional<HubToken> ResolveHubToken(const std::string& flag) {
  if (!flag.empty()) return HubToken{flag, "--hub_token"};
  if (const char* t = std::getenv("HF_TOKEN"); t != nullptr && *t != '\0') {
    return HubToken{std::string(absl::StripAsciiWhitespace(t)), "HF_TOKEN"};
  }
  std::string home_dir;
  if (const char* h = std::getenv("HF_HOME"); h != nullptr && *h != '\0') {
    home_dir = h;
  } else if (const char* home = std::getenv("HOME"); home != nullptr) {
    home_dir = absl::StrCat(home, "/.cache/huggingface");
  }
  if (home_dir.empty()) return std::nullopt;
  const std::string path = home_dir + "/token";
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  std::string token(absl::StripAsciiWhitespace(text.str()));
  if (token.empty()) return std::nullopt;
  return HubToken{std::move(token), path};
}

}  // namespace loom::hub
