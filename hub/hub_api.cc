#include "hub/hub_api.h"

#include <curl/curl.h>

#include <memory>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace loom::hub {
namespace {

size_t Append(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

}  // namespace

absl::StatusOr<CreatedRepo> CreateRepo(const std::string& hub_url,
                                             const std::string& repo_id,
                                             const std::optional<std::string>& token,
                                             bool private_repo, long timeout_s) {
  static std::once_flag init;  // curl_global_init is not thread-safe: once per process
  std::call_once(init, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  nlohmann::ordered_json body;
  const size_t slash = repo_id.rfind('/');
  body["name"] = slash == std::string::npos ? repo_id : repo_id.substr(slash + 1);
  if (slash != std::string::npos) body["organization"] = repo_id.substr(0, slash);
  body["private"] = private_repo;
  const std::string payload = body.dump();
  const std::string url = hub_url + "/api/repos/create";

  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) return absl::InternalError("creating the hub repository: curl_easy_init failed");
  curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/json");
  if (token) {
    const std::string auth = "Authorization: Bearer " + *token;
    headers = curl_slist_append(headers, auth.c_str());  // copied by curl; memory only
  }
  std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> header_list(headers,
                                                                          curl_slist_free_all);
  std::string response;
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, payload.c_str());
  curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, static_cast<long>(payload.size()));
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, Append);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &response);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, timeout_s);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  const CURLcode rc = curl_easy_perform(c);
  const std::string what = absl::StrCat("creating the hub repository ", repo_id, " at ", hub_url);
  if (rc != CURLE_OK) {
    return absl::UnavailableError(absl::StrCat(what, ": ", curl_easy_strerror(rc)));
  }
  long code = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
  switch (code) {
    case 200:
    case 201: {
      CreatedRepo created{CreateRepoOutcome::kCreated, ""};
      const nlohmann::json answer = nlohmann::json::parse(response, nullptr, false);
      if (answer.is_object() && answer.contains("url") && answer["url"].is_string()) {
        created.url = answer["url"].get<std::string>();
      }
      return created;
    }
    case 409:
      return CreatedRepo{CreateRepoOutcome::kExists, ""};
    case 404:
    case 405:
      return CreatedRepo{CreateRepoOutcome::kNoApi, ""};
    case 401:
    case 403:
      return absl::PermissionDeniedError(absl::StrCat(
          what, ": the server refused the token (HTTP ", code,
          "); pass one with write access in --hub_token or HF_TOKEN, or log in with "
          "huggingface-cli login"));
    default:
      return absl::UnknownError(absl::StrCat(what, ": HTTP ", code));
  }
}

}  // namespace loom::hub
