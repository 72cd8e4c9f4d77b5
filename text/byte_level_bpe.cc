#include "text/byte_level_bpe.h"

#include <unicode/regex.h>
#include <unicode/unistr.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <queue>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "text/byte_level_bpe_internal.h"
#include "text/unicode.h"

namespace loom::text {

ByteLevelBpeTokenizer::ByteLevelBpeTokenizer() : state_(std::make_unique<State>()) {}
ByteLevelBpeTokenizer::~ByteLevelBpeTokenizer() = default;
ByteLevelBpeTokenizer::ByteLevelBpeTokenizer(ByteLevelBpeTokenizer&&) noexcept = default;
ByteLevelBpeTokenizer& ByteLevelBpeTokenizer::operator=(ByteLevelBpeTokenizer&&) noexcept =
    default;

namespace {

using bpe_internal::AddedToken;
using bpe_internal::Stage;

// whose UTF-8 length goes to *width — what tokenizers' lstrip / rstrip strip.
bool IsSpaceAt(const std::string& text, size_t i, size_t* width) {
  const unsigned char c = static_cast<unsigned char>(text[i]);
  const size_t n = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
  if (i + n > text.size()) return false;
  absl::StatusOr<std::u32string> cp = DecodeUtf8(absl::string_view(text).substr(i, n));
  if (!cp.ok() || cp->size() != 1) return false;
  const char32_t u = (*cp)[0];
  const bool space = (u >= 0x9 && u <= 0xD) || u == 0x20 || u == 0x85 || u == 0xA0 ||
                     u == 0x1680 || (u >= 0x2000 && u <= 0x200A) || u == 0x2028 ||
                     u == 0x2029 || u == 0x202F || u == 0x205F || u == 0x3000;
  if (space) *width = n;
  return space;
}

struct Segment {
  std::string text;  // for an added token: the span matched, stripped whitespace included
  const AddedToken* added = nullptr;
};

// Added tokens cut out of the raw text (leftmost, then longest); lstrip / rstrip take the
// whitespace beside a token into it.
std::vector<Segment> SplitAdded(const std::string& text, const std::vector<AddedToken>& added) {
  std::vector<Segment> out;
  size_t start = 0, i = 0;
  while (i < text.size()) {
    const AddedToken* match = nullptr;
    for (const AddedToken& t : added) {
      if (!t.content.empty() && text.compare(i, t.content.size(), t.content) == 0) {
        match = &t;
        break;
      }
    }
    if (match == nullptr) {
      ++i;
      continue;
    }
    size_t left = i, right = i + match->content.size(), w = 0;
    if (match->lstrip) {
      while (left > start) {
        size_t back = left - 1;
        while (back > start && (static_cast<unsigned char>(text[back]) & 0xC0) == 0x80) --back;
        if (!IsSpaceAt(text, back, &w) || back + w != left) break;
        left = back;
      }
    }
    if (match->rstrip) {
      while (right < text.size() && IsSpaceAt(text, right, &w)) right += w;
    }
    if (left > start) out.push_back({text.substr(start, left - start), nullptr});
    out.push_back({text.substr(left, right - left), match});
    i = start = right;
  }
  if (start < text.size()) out.push_back({text.substr(start), nullptr});
  return out;
}

// How long one regex split may run (ICU's units of about a millisecond): a pattern from a
// tokenizer.json that backtracks without end fails instead of hanging the run.
constexpr int32_t kRegexTimeLimit = 5000;

// Splits every piece by `regex`, keeping both the matches and what lies between (Isolated).
absl::StatusOr<std::vector<std::string>> SplitIsolated(const std::vector<std::string>& pieces,
                                                       const icu::RegexPattern& regex) {
  std::vector<std::string> out;
  for (const std::string& piece : pieces) {
    const icu::UnicodeString u = icu::UnicodeString::fromUTF8(piece);
    UErrorCode status = U_ZERO_ERROR;
    std::unique_ptr<icu::RegexMatcher> m(regex.matcher(u, status));
    if (U_SUCCESS(status)) m->setTimeLimit(kRegexTimeLimit, status);
    int32_t prev = 0;
    auto emit = [&](int32_t a, int32_t b) {
      if (b <= a) return;
      std::string s;
      u.tempSubStringBetween(a, b).toUTF8String(s);
      out.push_back(std::move(s));
    };
    while (U_SUCCESS(status) && m->find(status)) {
      const int32_t a = m->start(status), b = m->end(status);
      emit(prev, a);
      emit(a, b);
      prev = b;  // ICU's find() moves past an empty match by itself
    }
    if (U_FAILURE(status)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the pre-tokenizer's regex failed on a piece of ", piece.size(), " bytes (",
          u_errorName(status), status == U_REGEX_TIME_OUT ? ": it backtracks too long" : "",
          ")"));
    }
    emit(prev, u.length());
  }
  return out;
}

std::vector<std::string> Chars(const std::string& utf8) {
  std::vector<std::string> out;
  for (size_t i = 0; i < utf8.size();) {
    size_t n = 1;
    const unsigned char c = static_cast<unsigned char>(utf8[i]);
    if (c >= 0xF0) n = 4; else if (c >= 0xE0) n = 3; else if (c >= 0xC0) n = 2;
    out.push_back(utf8.substr(i, n));
    i += n;
  }
  return out;
}

// Rust's String::from_utf8_lossy: each maximal invalid subsequence becomes one U+FFFD.
std::string DecodeUtf8Lossy(const std::string& bytes) {
  std::string out;
  size_t i = 0;
  while (i < bytes.size()) {
    const unsigned char c = static_cast<unsigned char>(bytes[i]);
    size_t need = 0;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c < 0x80) {
      out.push_back(static_cast<char>(c));
      ++i;
      continue;
    } else if (c >= 0xC2 && c <= 0xDF) {
      need = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
      need = 2;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      need = 3;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    }
    size_t j = i + 1, got = 0;
    while (got < need && j < bytes.size()) {
      const unsigned char d = static_cast<unsigned char>(bytes[j]);
      const unsigned char l = got == 0 ? lo : 0x80, h = got == 0 ? hi : 0xBF;
      if (d < l || d > h) break;
      ++j;
      ++got;
    }
    if (need > 0 && got == need) {
      out.append(bytes, i, j - i);
    } else {
      out += "\xEF\xBF\xBD";
    }
    i = j;
  }
  return out;
}

}  // namespace

int64_t ByteLevelBpeTokenizer::size() const {
  return static_cast<int64_t>(state_->id_to_token.size());
}

std::optional<int64_t> ByteLevelBpeTokenizer::TokenToId(const std::string& token) const {
  for (const AddedToken& t : state_->added) {
    if (t.content == token) return t.id;
  }
  auto it = state_->vocab.find(token);
  if (it == state_->vocab.end()) return std::nullopt;
  return it->second;
}

// BPE on one byte-mapped piece as tokenizers' BPE::merge_word: a min-heap of (rank, position)
// over adjacent pairs — the lowest rank merged first, the leftmost of equal ranks — with stale
// entries (a side merged away or changed since) skipped: O(n log n) in the piece's length.
absl::StatusOr<std::vector<int64_t>> ByteLevelBpeTokenizer::PieceIds(const std::string& piece) const {
  const State& s = *state_;
  if (s.ignore_merges) {
    if (auto it = s.vocab.find(piece); it != s.vocab.end()) return std::vector<int64_t>{it->second};
  }
  std::vector<std::string> sym = Chars(piece);
  const int n = static_cast<int>(sym.size());
  std::vector<int> prev(n), next(n);
  std::vector<bool> alive(n, true);
  for (int i = 0; i < n; ++i) {
    prev[i] = i - 1;
    next[i] = i + 1 < n ? i + 1 : -1;
  }
  using Entry = std::tuple<int64_t, int, int>;  // rank, left, right
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap;
  auto push = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    auto it = s.ranks.find({sym[left], sym[right]});
    if (it != s.ranks.end()) heap.emplace(it->second, left, right);
  };
  for (int i = 0; i + 1 < n; ++i) push(i, i + 1);
  while (!heap.empty()) {
    const auto [rank, left, right] = heap.top();
    heap.pop();
    if (!alive[left] || !alive[right] || next[left] != right) continue;
    auto it = s.ranks.find({sym[left], sym[right]});
    if (it == s.ranks.end() || it->second != rank) continue;  // a side changed since
    sym[left] += sym[right];
    alive[right] = false;
    next[left] = next[right];
    if (next[right] >= 0) prev[next[right]] = left;
    push(prev[left], left);
    push(left, next[left]);
  }
  std::vector<int64_t> ids;
  for (int i = 0; i < n; ++i) {
    if (!alive[i]) continue;
    auto it = s.vocab.find(sym[i]);
    if (it == s.vocab.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("the vocabulary has no token \"", sym[i], "\" (a byte-level vocabulary holds "
                       "all 256 byte characters)"));
    }
    ids.push_back(it->second);
  }
  return ids;
}

absl::StatusOr<std::vector<std::pair<std::string, int64_t>>> ByteLevelBpeTokenizer::TokenizeWithIds(
    absl::string_view text) const {
  RETURN_IF_ERROR(DecodeUtf8(text).status());
  std::vector<std::pair<std::string, int64_t>> tokens;
  for (const Segment& seg : SplitAdded(std::string(text), state_->added)) {
    if (seg.added != nullptr) {
      tokens.emplace_back(seg.text, seg.added->id);
      continue;
    }
    std::vector<std::string> pieces = {seg.text};
    for (const Stage& stage : state_->stages) {
      if (stage.byte_level && stage.add_prefix_space) {
        for (std::string& p : pieces) {
          if (p.empty() || p[0] != ' ') p = " " + p;
        }
      }
      if (stage.regex != nullptr) {
        ASSIGN_OR_RETURN(pieces, SplitIsolated(pieces, *stage.regex));
      }
    }
    for (const std::string& p : pieces) {
      std::string mapped;
      for (unsigned char c : p) mapped += state_->byte_to_char[c];
      ASSIGN_OR_RETURN(std::vector<int64_t> ids, PieceIds(mapped));
      for (int64_t id : ids) tokens.emplace_back(state_->id_to_token[id], id);
    }
  }
  return tokens;
}

absl::StatusOr<std::vector<std::string>> ByteLevelBpeTokenizer::Tokenize(
    absl::string_view text) const {
  ASSIGN_OR_RETURN(auto tokens, TokenizeWithIds(text));
  std::vector<std::string> out;
  for (auto& [token, id] : tokens) out.push_back(std::move(token));
  return out;
}

absl::StatusOr<Encoding> ByteLevelBpeTokenizer::Encode(absl::string_view text,
                                                       const EncodeOptions& options) const {
  ASSIGN_OR_RETURN(auto tokens, TokenizeWithIds(text));
  std::vector<int64_t> ids, none;
  for (const auto& [token, id] : tokens) ids.push_back(id);
  const std::vector<int64_t> empty;
  const std::vector<int64_t>& prefix = options.add_special_tokens ? state_->prefix_ids : empty;
  const std::vector<int64_t>& suffix = options.add_special_tokens ? state_->suffix_ids : empty;
  ASSIGN_OR_RETURN(std::optional<int64_t> max_length, ResolveMaxLength(options, model_max_length_));
  if (max_length.has_value() && options.truncation != Truncation::kDoNotTruncate) {
    RETURN_IF_ERROR(Truncate(options.truncation, *max_length,
                             static_cast<int64_t>(prefix.size() + suffix.size()), false, ids, none));
  }
  Encoding enc;
  enc.input_ids = prefix;
  enc.input_ids.insert(enc.input_ids.end(), ids.begin(), ids.end());
  enc.input_ids.insert(enc.input_ids.end(), suffix.begin(), suffix.end());
  if (options.return_token_type_ids) enc.token_type_ids.assign(enc.input_ids.size(), 0);
  if (options.return_attention_mask) enc.attention_mask.assign(enc.input_ids.size(), 1);
  if (options.padding != Padding::kDoNotPad) {
    if (!pad_id_.has_value()) {
      return absl::FailedPreconditionError(
          "Asking to pad but the tokenizer does not have a padding token (set pad_token in "
          "tokenizer_config.json, e.g. to the eos token, or do not pad)");
    }
    PadEncoding(options, max_length.value_or(enc.input_ids.size()), *pad_id_, &enc);
  }
  return enc;
}

absl::StatusOr<std::string> ByteLevelBpeTokenizer::Decode(const std::vector<int64_t>& ids,
                                                          bool skip_special_tokens) const {
  std::string bytes;
  for (int64_t id : ids) {
    if (id < 0) {
      return absl::InvalidArgumentError(absl::StrCat("token id ", id, " is negative"));
    }
    if (id >= size()) continue;  // tokenizers drops ids it has no token for (padded vocabularies)
    const std::string& token = state_->id_to_token[id];
    const auto added = std::find_if(state_->added.begin(), state_->added.end(),
                                    [&](const AddedToken& t) { return t.id == id; });
    if (added != state_->added.end() && added->special && skip_special_tokens) continue;
    std::string decoded;
    bool mapped = true;
    for (const std::string& ch : Chars(token)) {
      auto it = state_->char_to_byte.find(ch);
      if (it == state_->char_to_byte.end()) {
        mapped = false;
        break;
      }
      decoded.push_back(static_cast<char>(it->second));
    }
    bytes += mapped ? decoded : token;
  }
  const std::string text = DecodeUtf8Lossy(bytes);
  return state_->clean_up ? CleanUpTokenization(text) : text;
}

}  // namespace loom::text
