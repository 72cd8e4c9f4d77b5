#include "examples/translation/synthetic_task.h"

#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "nlohmann/json.hpp"
#include "text/sentencepiece_trainer.h"

namespace loom::examples::translation {
namespace {

using Dictionary = std::vector<std::pair<std::string, std::string>>;

const Dictionary& Nouns() {
  static const auto* d = new Dictionary{
      {"cat", "pisica"},   {"dog", "câinele"},   {"house", "casa"},      {"table", "masa"},
      {"chair", "scaunul"}, {"city", "orașul"},  {"river", "râul"},      {"mountain", "muntele"},
      {"train", "trenul"}, {"station", "gara"},  {"ticket", "biletul"},  {"book", "cartea"}};
  return *d;
}
const Dictionary& Adjectives() {
  static const auto* d = new Dictionary{{"small", "mic"},      {"green", "verde"},
                                        {"red", "roșu"},       {"blue", "albastru"},
                                        {"big", "mare"},       {"old", "veche"}};
  return *d;
}
const Dictionary& Verbs() {
  static const auto* d = new Dictionary{
      {"sleeps", "doarme"}, {"runs", "aleargă"}, {"waits", "așteaptă"}, {"sits", "stă"}};
  return *d;
}
const Dictionary& Prepositions() {
  static const auto* d = new Dictionary{{"on", "pe"}, {"under", "sub"}, {"near", "lângă"}};
  return *d;
}
const Dictionary& TimeWords() {
  static const auto* d = new Dictionary{
      {"today", "astăzi"}, {"tomorrow", "mâine"}, {"yesterday", "ieri"}};
  return *d;
}

// Draws from std::mt19937_64's raw output (its sequence is fixed by the standard; the
// distributions' are not), so the data is the same with every standard library.
class Draw {
 public:
  explicit Draw(uint64_t seed) : engine_(seed) {}
  size_t Below(size_t n) { return static_cast<size_t>(engine_() % n); }
  bool Chance(int percent) { return Below(100) < static_cast<size_t>(percent); }
  const std::pair<std::string, std::string>& From(const Dictionary& d) { return d[Below(d.size())]; }

 private:
  std::mt19937_64 engine_;
};

// "the [ADJ] NOUN" -> "NOUN [ADJ]".
void NounPhrase(Draw& draw, std::vector<std::string>& en, std::vector<std::string>& ro) {
  const auto& noun = draw.From(Nouns());
  en.push_back("the");
  if (draw.Chance(70)) {
    const auto& adjective = draw.From(Adjectives());
    en.push_back(adjective.first);
    en.push_back(noun.first);
    ro.push_back(noun.second);
    ro.push_back(adjective.second);
  } else {
    en.push_back(noun.first);
    ro.push_back(noun.second);
  }
}

TranslationPair Sentence(Draw& draw) {
  std::vector<std::string> en, ro;
  NounPhrase(draw, en, ro);
  const auto& verb = draw.From(Verbs());
  en.push_back(verb.first);
  ro.push_back(verb.second);
  if (draw.Chance(60)) {
    const auto& preposition = draw.From(Prepositions());
    en.push_back(preposition.first);
    ro.push_back(preposition.second);
    NounPhrase(draw, en, ro);
  }
  if (draw.Chance(40)) {
    const auto& time = draw.From(TimeWords());
    en.push_back(time.first);
    ro.push_back(time.second);
  }
  return {absl::StrCat(absl::StrJoin(en, " "), " ."), absl::StrCat(absl::StrJoin(ro, " "), " .")};
}

std::vector<TranslationPair> Split(Draw& draw, int64_t n) {
  std::vector<TranslationPair> out;
  out.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out.push_back(Sentence(draw));
  return out;
}

std::string JsonLines(const std::vector<TranslationPair>& pairs) {
  std::string out;
  for (const TranslationPair& p : pairs) {
    const nlohmann::ordered_json record = {
        {"translation", nlohmann::ordered_json{{"en", p.source}, {"ro", p.target}}}};
    out += record.dump() + "\n";
  }
  return out;
}

}  // namespace

SyntheticTranslation MakeSyntheticTranslation(const SyntheticTranslationOptions& options) {
  Draw draw(options.seed);
  SyntheticTranslation data;
  data.train = Split(draw, options.num_train);
  data.validation = Split(draw, options.num_validation);
  data.test = Split(draw, options.num_test);
  return data;
}

absl::Status WriteTranslationJsonLines(const std::string& dir, const SyntheticTranslation& data) {
  RETURN_IF_ERROR(base::MakeDirs(dir));
  RETURN_IF_ERROR(base::WriteFileAtomically(dir + "/train.json", JsonLines(data.train)));
  RETURN_IF_ERROR(base::WriteFileAtomically(dir + "/validation.json", JsonLines(data.validation)));
  return base::WriteFileAtomically(dir + "/test.json", JsonLines(data.test));
}

models::t5::T5Config BuiltinT5Config(int64_t vocab_size) {
  models::t5::T5Config c;
  c.vocab_size = vocab_size;
  c.d_model = 64;
  c.d_kv = 16;
  c.num_heads = 4;
  c.d_ff = 128;
  c.num_layers = 2;
  c.num_decoder_layers = 2;
  c.relative_attention_num_buckets = 32;
  c.relative_attention_max_distance = 128;
  c.feed_forward_proj = "relu";
  c.tie_word_embeddings = true;
  c.pad_token_id = 0;
  c.eos_token_id = 1;
  c.decoder_start_token_id = 0;
  return c;
}

absl::StatusOr<text::T5Tokenizer> BuiltinTokenizer(const std::vector<std::string>& corpus) {
  std::string model, error;
  if (!text::TrainSentencePieceModel(corpus, {.vocab_size = 200}, &model, &error)) {
    return absl::InvalidArgumentError(
        absl::StrCat("training the built-in SentencePiece model: ", error));
  }
  return text::T5Tokenizer::Create(std::move(model));
}

}  // namespace loom::examples::translation
