#include "examples/glue/synthetic_task.h"

#include <algorithm>
#include <random>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "text/vocab.h"

namespace loom::examples::glue_script {
namespace {

using Words = std::vector<std::string>;

const Words& Determiners() {
  static const Words* w = new Words{"the", "this", "that", "its"};
  return *w;
}
const Words& Nouns() {
  static const Words* w = new Words{
      "movie",     "film",     "story",    "plot",       "cast",     "actor",       "actress",
      "script",    "ending",   "score",    "scene",      "director", "performance", "dialogue",
      "camera",    "music",    "picture",  "show",       "sequel",   "character",   "soundtrack",
      "comedy",    "drama",    "thriller", "romance",    "premise",  "finale",      "editing",
      "direction", "pacing",   "humor",    "screenplay", "narrator", "villain",     "hero",
      "animation", "costumes", "setting",  "acting",     "lead"};
  return *w;
}
const Words& Verbs() {
  static const Words* w =
      new Words{"was", "is", "seemed", "felt", "looked", "remained", "became", "sounded"};
  return *w;
}
const Words& Adverbs() {
  static const Words* w = new Words{"very",   "really", "quite",  "truly",     "rather",
                                    "so",     "pretty", "simply", "extremely", "genuinely",
                                    "fairly", "mostly", "often",  "always",    "somewhat"};
  return *w;
}
const Words& Positive() {
  static const Words* w = new Words{
      "wonderful", "great",     "brilliant", "charming", "moving",   "delightful", "superb",
      "funny",     "clever",    "beautiful", "fresh",    "gripping", "smart",      "touching",
      "enjoyable", "excellent", "fantastic", "lovely",   "powerful", "stunning",   "warm",
      "witty",     "engaging",  "inspired",  "solid",    "elegant",  "vivid",      "memorable",
      "heartfelt", "thrilling", "good",      "fun",      "sweet",    "rich",       "haunting",
      "graceful",  "sharp",     "tender",    "joyful",   "masterful"};
  return *w;
}
const Words& Negative() {
  static const Words* w = new Words{
      "boring",     "dull",      "awful",       "terrible", "bland",       "clumsy",   "tedious",
      "weak",       "messy",     "silly",       "lifeless", "predictable", "flat",     "painful",
      "stale",      "shallow",   "forgettable", "annoying", "hollow",      "tiresome", "sloppy",
      "lame",       "dreary",    "pointless",   "bad",      "poor",        "ugly",     "cheap",
      "slow",       "confusing", "bloated",     "sour",     "grim",        "hokey",    "mediocre",
      "incoherent", "wooden",    "dreadful",    "muddled",  "dismal"};
  return *w;
}
const Words& Neutral() {
  static const Words* w =
      new Words{"long",     "short",   "loud",   "quiet", "new",    "old",    "french",
                "american", "british", "recent", "dark",  "bright", "modern", "classic",
                "familiar", "unusual", "simple", "big",   "small",  "foreign"};
  return *w;
}
const Words& Openers() {
  static const Words* w =
      new Words{"honestly ,", "overall ,",     "i think",    "in the end ,",   "frankly ,",
                "to me ,",    "as expected ,", "for once ,", "sadly or not ,", "in my opinion ,"};
  return *w;
}
const Words& Negations() {
  static const Words* w = new Words{"not", "never"};
  return *w;
}

template <typename Rng>
const std::string& Pick(const Words& words, Rng& rng) {
  return words[std::uniform_int_distribution<size_t>(0, words.size() - 1)(rng)];
}

template <typename Rng>
std::string Clause(Rng& rng, const std::string& adjective, bool negate) {
  std::vector<std::string> parts = {Pick(Determiners(), rng), Pick(Nouns(), rng),
                                    Pick(Verbs(), rng)};
  std::bernoulli_distribution half(0.5);
  if (half(rng)) parts.push_back(Pick(Adverbs(), rng));
  if (negate) parts.push_back(Pick(Negations(), rng));  // right before the adjective
  parts.push_back(adjective);
  return absl::StrJoin(parts, " ");
}

template <typename Rng>
std::pair<std::string, int> Sentence(Rng& rng, double negation_rate) {
  std::bernoulli_distribution half(0.5), negated(negation_rate), often(0.4);
  const bool positive = half(rng);
  const bool negate = negated(rng);
  const std::string& adjective = Pick(positive ? Positive() : Negative(), rng);
  std::string main = Clause(rng, adjective, negate);
  std::vector<std::string> parts;
  if (often(rng)) parts.push_back(Pick(Openers(), rng));
  if (often(rng)) {
    // A distractor clause with a neutral adjective, before or after the one that counts.
    std::string other = Clause(rng, Pick(Neutral(), rng), false);
    const std::string& link = half(rng) ? std::string(", and") : std::string(", but");
    if (half(rng)) {
      parts.push_back(main);
      parts.push_back(link);
      parts.push_back(other);
    } else {
      parts.push_back(other);
      parts.push_back(link);
      parts.push_back(main);
    }
  } else {
    parts.push_back(main);
  }
  parts.push_back(half(rng) ? "." : "!");
  return {absl::StrJoin(parts, " "), (positive != negate) ? 1 : 0};
}

}  // namespace

absl::StatusOr<text::BertTokenizer> BuiltinTokenizer() {
  std::set<std::string> words;
  for (const Words* list : {&Determiners(), &Nouns(), &Verbs(), &Adverbs(), &Positive(),
                            &Negative(), &Neutral(), &Openers(), &Negations()}) {
    for (const std::string& entry : *list) {
      for (absl::string_view w : absl::StrSplit(entry, ' ', absl::SkipEmpty())) {
        words.insert(std::string(w));
      }
    }
  }
  for (const char* extra : {".", ",", "!", "?", "'", "and", "but", "a", "an", "it", "of", "to",
                            "was", "not", "no", "yes", "good", "bad"}) {
    words.insert(extra);
  }
  std::vector<std::string> tokens = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
  tokens.insert(tokens.end(), words.begin(), words.end());
  text::BertTokenizerOptions options;
  options.do_lower_case = true;
  options.model_max_length = 64;
  return text::BertTokenizer::Create(text::Vocab::FromTokens(tokens), options);
}

models::bert::BertConfig BuiltinBertConfig(int64_t vocab_size) {
  models::bert::BertConfig config;
  config.vocab_size = vocab_size;
  config.hidden_size = 64;
  config.num_hidden_layers = 2;
  config.num_attention_heads = 2;
  config.intermediate_size = 128;
  config.max_position_embeddings = 64;
  return config;
}

SyntheticSst2 MakeSyntheticSst2(const SyntheticOptions& options) {
  std::mt19937_64 rng(options.seed);
  SyntheticSst2 data;
  for (int64_t i = 0; i < options.num_train; ++i) {
    data.train.push_back(Sentence(rng, options.negation_rate));
  }
  for (int64_t i = 0; i < options.num_validation; ++i) {
    data.validation.push_back(Sentence(rng, options.negation_rate));
  }
  return data;
}

absl::Status WriteSst2Tsv(const std::string& dir, const SyntheticSst2& data) {
  RETURN_IF_ERROR(base::MakeDirs(dir));
  auto labelled = [](const std::vector<std::pair<std::string, int>>& rows) {
    std::string text = "sentence\tlabel\n";
    for (const auto& [sentence, label] : rows) absl::StrAppend(&text, sentence, "\t", label, "\n");
    return text;
  };
  std::string test = "index\tsentence\n";
  for (size_t i = 0; i < data.validation.size(); ++i) {
    absl::StrAppend(&test, i, "\t", data.validation[i].first, "\n");
  }
  RETURN_IF_ERROR(base::WriteFileAtomically(dir + "/train.tsv", labelled(data.train)));
  RETURN_IF_ERROR(base::WriteFileAtomically(dir + "/dev.tsv", labelled(data.validation)));
  return base::WriteFileAtomically(dir + "/test.tsv", test);
}

}  // namespace loom::examples::glue_script
