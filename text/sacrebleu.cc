#include "text/sacrebleu.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "base/status_macros.h"
#include "text/unicode.h"

namespace loom::text {
namespace {

constexpr int kMaxOrder = 4;

bool IsDigit(char32_t c) { return c >= U'0' && c <= U'9'; }

// TokenizerRegexp's first class: [\{-\~\[-\` -\&\(-\+\:-\@\/].
bool IsSplitSymbol(char32_t c) {
  return (c >= U'{' && c <= U'~') || (c >= U'[' && c <= U'`') || (c >= U' ' && c <= U'&') ||
         (c >= U'(' && c <= U'+') || (c >= U':' && c <= U'@') || c == U'/';
}

bool IsDotOrComma(char32_t c) { return c == U'.' || c == U','; }

// re.sub of a two-character pattern (first, second) with "\1 \2 " / " \1 \2" / ...: the
// leftmost non-overlapping matches, as Python's re scans.
template <typename Match, typename Emit>
std::u32string SubPairs(const std::u32string& s, Match match, Emit emit) {
  std::u32string out;
  size_t i = 0;
  while (i < s.size()) {
    if (i + 1 < s.size() && match(s[i], s[i + 1])) {
      emit(s[i], s[i + 1], out);
      i += 2;
    } else {
      out += s[i++];
    }
  }
  return out;
}

std::u32string RegexpRules(const std::u32string& line) {
  std::u32string s;
  for (char32_t c : line) {
    if (IsSplitSymbol(c)) {
      s += U' ';
      s += c;
      s += U' ';
    } else {
      s += c;
    }
  }
  s = SubPairs(s, [](char32_t a, char32_t b) { return !IsDigit(a) && IsDotOrComma(b); },
               [](char32_t a, char32_t b, std::u32string& o) { o += {a, U' ', b, U' '}; });
  s = SubPairs(s, [](char32_t a, char32_t b) { return IsDotOrComma(a) && !IsDigit(b); },
               [](char32_t a, char32_t b, std::u32string& o) { o += {U' ', a, U' ', b}; });
  s = SubPairs(s, [](char32_t a, char32_t b) { return IsDigit(a) && b == U'-'; },
               [](char32_t a, char32_t b, std::u32string& o) { o += {a, U' ', b, U' '}; });
  return s;
}

// sacrebleu's Tokenizer13a as a list of words (Tokenize13a joins them with spaces).
absl::StatusOr<std::vector<std::string>> Words13a(absl::string_view line) {
  std::string text = absl::StrReplaceAll(line, {{"<skipped>", ""}});
  text = absl::StrReplaceAll(text, {{"-\n", ""}});
  text = absl::StrReplaceAll(text, {{"\n", " "}});
  if (text.find('&') != std::string::npos) {
    for (const auto& [from, to] : std::vector<std::pair<const char*, const char*>>{
             {"&quot;", "\""}, {"&amp;", "&"}, {"&lt;", "<"}, {"&gt;", ">"}}) {
      text = absl::StrReplaceAll(text, {{from, to}});
    }
  }
  ASSIGN_OR_RETURN(std::u32string cps, DecodeUtf8(absl::StrCat(" ", text, " ")));
  std::vector<std::string> words;
  for (const std::u32string& word : SplitOnPythonWhitespace(RegexpRules(cps))) {
    words.push_back(EncodeUtf8(word));
  }
  return words;
}

using NgramCounts = absl::flat_hash_map<std::string, int64_t>;

// extract_all_word_ngrams(line, 1, 4): n-grams keyed by their words joined with spaces (words
// hold no whitespace), the order being the number of words.
NgramCounts Ngrams(const std::vector<std::string>& words) {
  NgramCounts counts;
  for (int n = 1; n <= kMaxOrder; ++n) {
    for (size_t i = 0; i + n <= words.size(); ++i) {
      ++counts[absl::StrJoin(words.begin() + i, words.begin() + i + n, " ")];
    }
  }
  return counts;
}

int Order(const std::string& ngram) {
  return 1 + static_cast<int>(std::count(ngram.begin(), ngram.end(), ' '));
}

// _get_closest_ref_len.
int64_t ClosestRefLength(int64_t hyp_len, const std::vector<int64_t>& ref_lens) {
  int64_t best_diff = -1, best = -1;
  for (int64_t len : ref_lens) {
    const int64_t diff = std::llabs(hyp_len - len);
    if (best_diff == -1 || diff < best_diff) {
      best_diff = diff;
      best = len;
    } else if (diff == best_diff && len < best) {
      best = len;
    }
  }
  return best;
}

// One segment's statistics added into `score`.
absl::Status AddSegment(const std::string& hypothesis, const std::vector<std::string>& refs,
                        BleuScore& score) {
  NgramCounts ref_max;
  std::vector<int64_t> ref_lens;
  for (const std::string& ref : refs) {
    ASSIGN_OR_RETURN(std::vector<std::string> words, Words13a(ref));
    ref_lens.push_back(static_cast<int64_t>(words.size()));
    for (const auto& [ngram, count] : Ngrams(words)) {
      int64_t& slot = ref_max[ngram];
      slot = std::max(slot, count);
    }
  }
  ASSIGN_OR_RETURN(std::vector<std::string> hyp, Words13a(hypothesis));
  const int64_t hyp_len = static_cast<int64_t>(hyp.size());
  score.sys_len += hyp_len;
  score.ref_len += ClosestRefLength(hyp_len, ref_lens);
  for (const auto& [ngram, count] : Ngrams(hyp)) {
    const int order = Order(ngram);
    score.total[order - 1] += count;
    auto it = ref_max.find(ngram);
    if (it != ref_max.end()) score.correct[order - 1] += std::min(count, it->second);
  }
  return absl::OkStatus();
}

double MyLog(double x) { return x == 0.0 ? -9999999999.0 : std::log(x); }

// BLEU.compute_bleu with smooth_method "exp", effective_order false.
void ComputeBleu(BleuScore& s) {
  s.brevity_penalty =
      s.sys_len < s.ref_len
          ? (s.sys_len > 0 ? std::exp(1 - static_cast<double>(s.ref_len) / s.sys_len) : 0.0)
          : 1.0;
  s.precisions.assign(kMaxOrder, 0.0);
  bool any = false;
  for (int64_t c : s.correct) any = any || c != 0;
  if (!any) {
    s.score = 0.0;
    return;
  }
  double smooth = 1.0;
  for (int n = 0; n < kMaxOrder; ++n) {
    if (s.total[n] == 0) break;
    if (s.correct[n] == 0) {
      smooth *= 2;
      s.precisions[n] = 100.0 / (smooth * static_cast<double>(s.total[n]));
    } else {
      s.precisions[n] = 100.0 * static_cast<double>(s.correct[n]) / static_cast<double>(s.total[n]);
    }
  }
  double sum = 0;
  for (double p : s.precisions) sum += MyLog(p);
  s.score = s.brevity_penalty * std::exp(sum / kMaxOrder);
}

}  // namespace

absl::StatusOr<std::string> Tokenize13a(absl::string_view line) {
  ASSIGN_OR_RETURN(std::vector<std::string> words, Words13a(line));
  return absl::StrJoin(words, " ");
}

absl::StatusOr<BleuScore> CorpusBleu(const std::vector<std::string>& hypotheses,
                                     const std::vector<std::vector<std::string>>& references) {
  if (references.size() != hypotheses.size()) {
    return absl::InvalidArgumentError(absl::StrCat("BLEU got ", hypotheses.size(),
                                                   " predictions but ", references.size(),
                                                   " reference lists; give one per prediction"));
  }
  BleuScore score;
  score.correct.assign(kMaxOrder, 0);
  score.total.assign(kMaxOrder, 0);
  for (size_t i = 0; i < hypotheses.size(); ++i) {
    if (references[i].size() != references[0].size()) {
      return absl::InvalidArgumentError(
          "Sacrebleu requires the same number of references for each prediction");
    }
    ASSIGN_OR_RETURN(std::u32string hyp, DecodeUtf8(hypotheses[i]), absl::StrCat("prediction ", i));
    std::vector<std::string> refs;
    for (const std::string& r : references[i]) {
      ASSIGN_OR_RETURN(std::u32string ref, DecodeUtf8(r), absl::StrCat("reference of prediction ", i));
      refs.push_back(EncodeUtf8(PythonRStrip(ref)));
    }
    RETURN_IF_ERROR(AddSegment(EncodeUtf8(PythonRStrip(hyp)), refs, score));
  }
  ComputeBleu(score);
  return score;
}

}  // namespace loom::text
