#include "text/encoding.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

namespace loom::text {
namespace {

constexpr std::pair<Truncation, absl::string_view> kTruncationNames[] = {
    {Truncation::kDoNotTruncate, "do_not_truncate"},
    {Truncation::kLongestFirst, "longest_first"},
    {Truncation::kOnlyFirst, "only_first"},
    {Truncation::kOnlySecond, "only_second"},
};
constexpr std::pair<Padding, absl::string_view> kPaddingNames[] = {
    {Padding::kDoNotPad, "do_not_pad"},
    {Padding::kLongest, "longest"},
    {Padding::kMaxLength, "max_length"},
};

}  // namespace

absl::StatusOr<Truncation> ParseTruncation(absl::string_view name) {
  for (const auto& [value, spelling] : kTruncationNames) {
    if (name == spelling) return value;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown truncation strategy \"", name,
                   "\"; use one of do_not_truncate, longest_first, only_first, only_second"));
}

absl::StatusOr<Padding> ParsePadding(absl::string_view name) {
  for (const auto& [value, spelling] : kPaddingNames) {
    if (name == spelling) return value;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown padding strategy \"", name,
                                                 "\"; use one of do_not_pad, longest, max_length"));
}

absl::string_view TruncationName(Truncation truncation) {
  for (const auto& [value, spelling] : kTruncationNames) {
    if (value == truncation) return spelling;
  }
  return "?";
}

absl::string_view PaddingName(Padding padding) {
  for (const auto& [value, spelling] : kPaddingNames) {
    if (value == padding) return spelling;
  }
  return "?";
}

// The length truncation and max_length padding work to: the call's max_length, else the
// tokenizer's model_max_length; an error when they need one and there is none.
absl::StatusOr<std::optional<int64_t>> ResolveMaxLength(const EncodeOptions& options,
                                                        std::optional<int64_t> model_max_length) {
  if (options.max_length.has_value() && *options.max_length < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_length must be >= 0, got ", *options.max_length));
  }
  const std::optional<int64_t> max_length =
      options.max_length.has_value() ? options.max_length : model_max_length;
  if (options.truncation != Truncation::kDoNotTruncate && !max_length.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "truncation=", TruncationName(options.truncation),
        " needs a length: set max_length, or model_max_length in tokenizer_config.json"));
  }
  if (options.padding == Padding::kMaxLength && !max_length.has_value()) {
    return absl::InvalidArgumentError(
        "padding=max_length needs a length: set max_length, or model_max_length in "
        "tokenizer_config.json");
  }
  return max_length;
}

// Removes tokens from `a` and `b` (empty without a pair) so that they and `specials` special
// tokens fit in max_length, by `truncation` (not kDoNotTruncate).
absl::Status Truncate(Truncation truncation, int64_t max_length, int64_t specials, bool pair,
                      std::vector<int64_t>& a, std::vector<int64_t>& b) {
  const int64_t total = static_cast<int64_t>(a.size() + b.size()) + specials;
  const int64_t remove = total - max_length;
  if (remove <= 0) return absl::OkStatus();
  auto too_short = [&](absl::string_view which, size_t have) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot truncate to max_length=", max_length,
        " with truncation=", TruncationName(truncation), ": ", remove, " tokens must go but the ",
        which, " sequence has only ", have,
        " (truncation must leave it at least one token); raise max_length or pick another "
        "truncation strategy"));
  };
  if (truncation == Truncation::kOnlyFirst || (truncation == Truncation::kLongestFirst && !pair)) {
    if (static_cast<int64_t>(a.size()) <= remove) return too_short("first", a.size());
    a.resize(a.size() - remove);
  } else if (truncation == Truncation::kOnlySecond) {
    if (!pair) {
      return absl::InvalidArgumentError(absl::StrCat(
          "truncation=only_second needs a sequence pair, but only one sequence is longer "
          "than max_length=",
          max_length, "; use longest_first or only_first for single sequences"));
    }
    if (static_cast<int64_t>(b.size()) <= remove) return too_short("second", b.size());
    b.resize(b.size() - remove);
  } else {  // longest_first on a pair
    if (remove > static_cast<int64_t>(a.size() + b.size())) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot truncate the pair to max_length=", max_length,
                       ": the special tokens alone need ", specials, "; raise max_length"));
    }
    for (int64_t k = 0; k < remove; ++k) {
      if (a.size() > b.size()) {
        a.pop_back();
      } else {
        b.pop_back();
      }
    }
  }
  return absl::OkStatus();
}

void PadEncoding(const EncodeOptions& options, size_t length, int64_t pad_id, Encoding* enc) {
  if (enc->input_ids.size() >= length) return;
  const size_t extra = length - enc->input_ids.size();
  enc->input_ids.insert(enc->input_ids.end(), extra, pad_id);
  if (options.return_token_type_ids)
    enc->token_type_ids.insert(enc->token_type_ids.end(), extra, 0);
  if (options.return_attention_mask)
    enc->attention_mask.insert(enc->attention_mask.end(), extra, 0);
}

std::string CleanUpTokenization(const std::string& text) {
  return absl::StrReplaceAll(text, {{" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","},
                                    {" ' ", "'"}, {" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"},
                                    {" 've", "'ve"}, {" 're", "'re"}});
}

}  // namespace loom::text
