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
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "nlohmann/json.hpp"
#include "text/tokenizer_json.h"
#include "text/unicode.h"

namespace loom::text {
namespace {

using Json = nlohmann::json;

// tokenizers' ByteLevel regex (GPT-2's).
constexpr char kGpt2Pattern[] =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

absl::Status Unsupported(const std::string& source, absl::string_view what) {
  return absl::UnimplementedError(
      absl::StrCat(source, ": ", what, "; loom's byte-level BPE tokenizer does not implement it"));
}

// GPT-2's bytes_to_unicode: printable bytes map to themselves, the others to 256 + n.
std::vector<std::string> ByteToChar() {
  std::vector<bool> printable(256, false);
  for (int b = '!'; b <= '~'; ++b) printable[b] = true;
  for (int b = 0xA1; b <= 0xAC; ++b) printable[b] = true;
  for (int b = 0xAE; b <= 0xFF; ++b) printable[b] = true;
  std::vector<std::string> out(256);
  int n = 0;
  for (int b = 0; b < 256; ++b) {
    const char32_t cp = printable[b] ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + n++);
    out[b] = EncodeUtf8(std::u32string(1, cp));
  }
  return out;
}

// Oniguruma's \s and \S (Unicode White_Space), which ICU spells as a property.
std::string OnigurumaToIcu(const std::string& pattern) {
  return absl::StrReplaceAll(pattern, {{"\\s", "\\p{White_Space}"}, {"\\S", "\\P{White_Space}"}});
}

struct AddedToken {
  std::string content;
  int64_t id = 0;
  bool lstrip = false, rstrip = false, special = false;
};

// One pre-tokenizer stage: a regex split (Isolated) or the byte-level mapping.
struct Stage {
  std::unique_ptr<icu::RegexPattern> regex;  // split by it when set
  bool byte_level = false;
  bool add_prefix_space = false;
};

}  // namespace

struct ByteLevelBpeTokenizer::State {
  std::unordered_map<std::string, int64_t> vocab;
  std::vector<std::string> id_to_token;
  std::map<std::pair<std::string, std::string>, int64_t> ranks;
  bool ignore_merges = false;
  std::vector<AddedToken> added;  // longest first
  std::vector<Stage> stages;
  std::vector<int64_t> prefix_ids, suffix_ids;  // the template's special tokens
  std::vector<std::string> byte_to_char = ByteToChar();
  std::unordered_map<std::string, uint8_t> char_to_byte;
  bool clean_up = true;  // transformers 4.41's default when tokenizer_config.json has no key
};

ByteLevelBpeTokenizer::ByteLevelBpeTokenizer() : state_(std::make_unique<State>()) {}
ByteLevelBpeTokenizer::~ByteLevelBpeTokenizer() = default;
ByteLevelBpeTokenizer::ByteLevelBpeTokenizer(ByteLevelBpeTokenizer&&) noexcept = default;
ByteLevelBpeTokenizer& ByteLevelBpeTokenizer::operator=(ByteLevelBpeTokenizer&&) noexcept =
    default;

namespace {

std::string TypeOf(const Json& j) {
  auto it = j.find("type");
  return it != j.end() && it->is_string() ? it->get<std::string>() : "(none)";
}

absl::Status ReadModel(const Json& model, const std::string& source,
                       ByteLevelBpeTokenizer::State* s) {
  if (!model.is_object() || TypeOf(model) != "BPE") {
    return Unsupported(source, absl::StrCat("model type \"", TypeOf(model), "\""));
  }
  for (const char* key : {"dropout", "continuing_subword_prefix", "end_of_word_suffix"}) {
    auto it = model.find(key);
    if (it != model.end() && !it->is_null() && !(it->is_string() && it->get<std::string>().empty())) {
      return Unsupported(source, absl::StrCat("model.", key, " = ", it->dump()));
    }
  }
  if (model.value("byte_fallback", false)) return Unsupported(source, "model.byte_fallback true");
  s->ignore_merges = model.value("ignore_merges", false);
  auto vocab = model.find("vocab");
  if (vocab == model.end() || !vocab->is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": model.vocab must be an object"));
  }
  for (auto it = vocab->begin(); it != vocab->end(); ++it) {
    if (!it.value().is_number_integer() || it.value().get<int64_t>() < 0 ||
        it.value().get<int64_t>() > (1 << 24)) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ": model.vocab[", it.key(), "] must be an id in 0..2^24"));
    }
    s->vocab[it.key()] = it.value().get<int64_t>();
  }
  auto merges = model.find("merges");
  if (merges == model.end() || !merges->is_array()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": model.merges must be a list"));
  }
  int64_t rank = 0;
  for (const Json& m : *merges) {
    std::pair<std::string, std::string> pair;
    if (m.is_string()) {
      const std::vector<std::string> parts = absl::StrSplit(m.get<std::string>(), ' ');
      if (parts.size() != 2) {
        return absl::InvalidArgumentError(absl::StrCat(source, ": merge ", m.dump(), " is not \"a b\""));
      }
      pair = {parts[0], parts[1]};
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      pair = {m[0].get<std::string>(), m[1].get<std::string>()};
    } else {
      return absl::InvalidArgumentError(absl::StrCat(source, ": merge ", m.dump(), " is not a pair"));
    }
    if (s->vocab.find(pair.first + pair.second) == s->vocab.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          source, ": merge ", m.dump(), " makes a token that is not in model.vocab"));
    }
    s->ranks[std::move(pair)] = rank++;  // a repeated merge keeps its last rank, as tokenizers'

  }
  return absl::OkStatus();
}

absl::StatusOr<Stage> ByteLevelStage(const Json& j, const std::string& source, bool top_level) {
  Stage stage;
  stage.byte_level = true;
  stage.add_prefix_space = j.value("add_prefix_space", true);
  if (j.value("use_regex", true)) {
    UErrorCode status = U_ZERO_ERROR;
    stage.regex.reset(icu::RegexPattern::compile(
        icu::UnicodeString::fromUTF8(OnigurumaToIcu(kGpt2Pattern)), 0, status));
    if (U_FAILURE(status)) return absl::InternalError("compiling GPT-2's pattern in ICU");
  }
  (void)top_level;
  (void)source;
  return stage;
}

absl::StatusOr<Stage> SplitStage(const Json& j, const std::string& source) {
  auto pattern = j.find("pattern");
  if (pattern == j.end() || !pattern->is_object() || !pattern->contains("Regex") ||
      !(*pattern)["Regex"].is_string()) {
    return Unsupported(source, "pre_tokenizer Split without a \"Regex\" pattern");
  }
  if (j.value("behavior", "") != "Isolated" || j.value("invert", false)) {
    return Unsupported(source, absl::StrCat("pre_tokenizer Split with behavior ",
                                            j.value("behavior", "(none)"),
                                            j.value("invert", false) ? ", inverted" : ""));
  }
  Stage stage;
  UErrorCode status = U_ZERO_ERROR;
  UParseError where;
  stage.regex.reset(icu::RegexPattern::compile(
      icu::UnicodeString::fromUTF8(OnigurumaToIcu((*pattern)["Regex"].get<std::string>())), where,
      status));
  if (U_FAILURE(status)) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": the Split regex does not compile (",
                                                   u_errorName(status), " at offset ",
                                                   where.offset, ")"));
  }
  return stage;
}

absl::Status ReadPreTokenizer(const Json& j, const std::string& source,
                              ByteLevelBpeTokenizer::State* s) {
  const std::string type = TypeOf(j);
  if (type == "ByteLevel") {
    ASSIGN_OR_RETURN(Stage stage, ByteLevelStage(j, source, true));
    s->stages.push_back(std::move(stage));
    return absl::OkStatus();
  }
  if (type != "Sequence" || !j.contains("pretokenizers") || !j["pretokenizers"].is_array()) {
    return Unsupported(source, absl::StrCat("pre_tokenizer type \"", type, "\""));
  }
  for (const Json& p : j["pretokenizers"]) {
    const std::string t = TypeOf(p);
    if (t == "Split") {
      ASSIGN_OR_RETURN(Stage stage, SplitStage(p, source));
      s->stages.push_back(std::move(stage));
    } else if (t == "ByteLevel") {
      ASSIGN_OR_RETURN(Stage stage, ByteLevelStage(p, source, false));
      s->stages.push_back(std::move(stage));
    } else {
      return Unsupported(source, absl::StrCat("pre_tokenizer Sequence member \"", t, "\""));
    }
  }
  if (s->stages.empty() || !s->stages.back().byte_level) {
    return Unsupported(source, "a pre_tokenizer that does not end with ByteLevel");
  }
  return absl::OkStatus();
}

absl::Status ReadTemplate(const Json& j, const std::string& source,
                          ByteLevelBpeTokenizer::State* s) {
  const Json single = j.value("single", Json::array());
  const Json specials = j.value("special_tokens", Json::object());
  bool seen_sequence = false;
  for (const Json& item : single) {
    if (item.contains("Sequence")) {
      if (item["Sequence"].value("id", "") != "A") {
        return Unsupported(source, "a TemplateProcessing single template with sequence B");
      }
      seen_sequence = true;
      continue;
    }
    const std::string id = item.contains("SpecialToken") ? item["SpecialToken"].value("id", "") : "";
    auto it = specials.find(id);
    if (id.empty() || it == specials.end() || !it->contains("ids") || !(*it)["ids"].is_array()) {
      return Unsupported(source, absl::StrCat("TemplateProcessing item ", item.dump()));
    }
    for (const Json& v : (*it)["ids"]) {
      (seen_sequence ? s->suffix_ids : s->prefix_ids).push_back(v.get<int64_t>());
    }
  }
  if (!seen_sequence) return Unsupported(source, "a TemplateProcessing template without $A");
  return absl::OkStatus();
}

absl::Status ReadPostProcessor(const Json& j, const std::string& source,
                               ByteLevelBpeTokenizer::State* s) {
  if (j.is_null()) return absl::OkStatus();
  const std::string type = TypeOf(j);
  if (type == "ByteLevel") return absl::OkStatus();
  if (type == "TemplateProcessing") return ReadTemplate(j, source, s);
  if (type == "Sequence" && j.contains("processors") && j["processors"].is_array()) {
    for (const Json& p : j["processors"]) RETURN_IF_ERROR(ReadPostProcessor(p, source, s));
    return absl::OkStatus();
  }
  return Unsupported(source, absl::StrCat("post_processor type \"", type, "\""));
}

absl::Status ReadAddedTokens(const Json& j, const std::string& source,
                             ByteLevelBpeTokenizer::State* s) {
  if (j.is_null()) return absl::OkStatus();
  if (!j.is_array()) return absl::InvalidArgumentError(source + ": added_tokens must be a list");
  for (const Json& t : j) {
    if (!t.is_object() || !t.contains("content") || !t["content"].is_string() ||
        !t.contains("id") || !t["id"].is_number_integer()) {
      return absl::InvalidArgumentError(absl::StrCat(source, ": bad added token ", t.dump()));
    }
    if (t["id"].get<int64_t>() < 0 || t["id"].get<int64_t>() > (1 << 24)) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ": added token ", t["content"].dump(), " has an id outside 0..2^24"));
    }
    if (t.value("single_word", false)) {
      return Unsupported(source, absl::StrCat("added token ", t["content"].dump(), " with single_word"));
    }
    s->added.push_back({t["content"].get<std::string>(), t["id"].get<int64_t>(),
                        t.value("lstrip", false), t.value("rstrip", false),
                        t.value("special", false)});
  }
  std::stable_sort(s->added.begin(), s->added.end(), [](const AddedToken& a, const AddedToken& b) {
    return a.content.size() > b.content.size();
  });
  return absl::OkStatus();
}

// Rust's char::is_whitespace (Unicode White_Space) for the character starting at byte `i`,
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

absl::StatusOr<ByteLevelBpeTokenizer> ByteLevelBpeTokenizer::FromTokenizerJson(
    const std::string& text, const std::string& source) {
  // The readers check the shapes they rely on; a value of another JSON type than a field's
  // (nlohmann's type_error) is reported here, whichever field it was.
  try {
    return Parse(text, source);
  } catch (const Json::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": a field has the wrong JSON type (", e.what(), ")"));
  }
}

absl::StatusOr<ByteLevelBpeTokenizer> ByteLevelBpeTokenizer::Parse(const std::string& text,
                                                                  const std::string& source) {
  const Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": not a JSON object"));
  }
  ByteLevelBpeTokenizer tok;
  State* s = tok.state_.get();
  RETURN_IF_ERROR(ReadModel(j.value("model", Json()), source, s));
  if (auto n = j.find("normalizer"); n != j.end() && !n->is_null()) {
    return Unsupported(source, absl::StrCat("normalizer type \"", TypeOf(*n), "\""));
  }
  RETURN_IF_ERROR(ReadPreTokenizer(j.value("pre_tokenizer", Json::object()), source, s));
  RETURN_IF_ERROR(ReadPostProcessor(j.value("post_processor", Json()), source, s));
  if (auto d = j.find("decoder"); d != j.end() && !d->is_null() && TypeOf(*d) != "ByteLevel") {
    return Unsupported(source, absl::StrCat("decoder type \"", TypeOf(*d), "\""));
  }
  RETURN_IF_ERROR(ReadAddedTokens(j.value("added_tokens", Json()), source, s));
  int64_t size = 0;
  for (const auto& [token, id] : s->vocab) size = std::max(size, id + 1);
  for (const AddedToken& t : s->added) size = std::max(size, t.id + 1);
  s->id_to_token.assign(static_cast<size_t>(size), "");
  for (const auto& [token, id] : s->vocab) s->id_to_token[id] = token;
  for (const AddedToken& t : s->added) s->id_to_token[t.id] = t.content;
  for (const std::vector<int64_t>* ids : {&s->prefix_ids, &s->suffix_ids}) {
    for (int64_t id : *ids) {
      if (id < 0 || id >= size) {
        return absl::InvalidArgumentError(absl::StrCat(
            source, ": the post_processor's template names the id ", id,
            ", outside the vocabulary (size ", size, ")"));
      }
    }
  }
  for (int b = 0; b < 256; ++b) s->char_to_byte[s->byte_to_char[b]] = static_cast<uint8_t>(b);
  tok.json_text_ = text;
  return tok;
}

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

absl::StatusOr<ByteLevelBpeTokenizer> ByteLevelBpeTokenizer::FromPretrained(const std::string& dir) {
  const std::string path = dir + "/tokenizer.json";
  if (!RegularFileExists(path)) {
    return absl::NotFoundError(absl::StrCat(path, " not found"));
  }
  ASSIGN_OR_RETURN(std::string text, base::ReadFile(path));
  ASSIGN_OR_RETURN(ByteLevelBpeTokenizer tok, FromTokenizerJson(text, path));
  const std::string config_path = dir + "/tokenizer_config.json";
  if (RegularFileExists(config_path)) {
    ASSIGN_OR_RETURN(Json config, ReadJsonObject(config_path));
    RETURN_IF_ERROR(ReadModelMaxLength(config, config_path, &tok.model_max_length_));
    if (auto it = config.find("pad_token"); it != config.end() && !it->is_null()) {
      std::string pad;
      RETURN_IF_ERROR(ReadToken(config, config_path, "pad_token", &pad));
      tok.pad_id_ = tok.TokenToId(pad);
      if (!tok.pad_id_.has_value()) {
        return absl::InvalidArgumentError(
            absl::StrCat(config_path, ": pad_token \"", pad, "\" is not in the vocabulary"));
      }
    }
    RETURN_IF_ERROR(ReadBool(config, config_path, "clean_up_tokenization_spaces",
                             &tok.state_->clean_up));
    tok.config_text_ = config.dump(2) + "\n";
  }
  return tok;
}

absl::Status ByteLevelBpeTokenizer::SavePretrained(const std::string& dir) const {
  RETURN_IF_ERROR(base::MakeDirs(dir));
  RETURN_IF_ERROR(base::WriteFileAtomically(dir + "/tokenizer.json", json_text_));
  if (config_text_.empty()) return absl::OkStatus();
  return base::WriteFileAtomically(dir + "/tokenizer_config.json", config_text_);
}

}  // namespace loom::text
