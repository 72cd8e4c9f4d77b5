#include "examples/clm/synthetic_corpus.h"

#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/file_util.h"
#include "text/sentencepiece_trainer.h"

namespace loom::examples::clm {
namespace {

const std::vector<std::string>& Words(int kind) {
  static const auto* lists = new std::vector<std::vector<std::string>>{
      {"red", "green", "blue", "small", "old", "quiet", "brave", "tired"},
      {"fox", "dog", "cat", "horse", "bird", "mouse", "bear", "wolf"},
      {"jumped", "walked", "ran", "looked", "slept", "sat"},
      {"fence", "river", "hill", "table", "road", "garden"},
      {"Ana", "Ben", "Carla", "Dan", "Eva", "Filip"},
      {"apples", "pears", "plums", "books", "coins", "stones"},
  };
  return (*lists)[kind];
}

class Draw {
 public:
  explicit Draw(uint64_t seed) : gen_(seed) {}
  uint64_t Below(uint64_t n) { return gen_() % n; }
  const std::string& Word(int kind) { return Words(kind)[Below(Words(kind).size())]; }

 private:
  std::mt19937_64 gen_;
};

std::string Sentence(Draw& d) {
  switch (d.Below(3)) {
    case 0:
      return absl::StrCat("the ", d.Word(0), " ", d.Word(1), " ", d.Word(2), " over the ",
                          d.Word(0), " ", d.Word(3), ".");
    case 1: {
      const std::string a = d.Word(4), b = d.Word(4), thing = d.Word(5);
      const uint64_t have = 2 + d.Below(8), give = 1 + d.Below(have - 1);
      return absl::StrCat(a, " has ", have, " ", thing, " and gives ", give, " to ", b, ", so ",
                          a, " has ", have - give, " ", thing, " left.");
    }
    default: {
      const uint64_t from = d.Below(90), count = 4 + d.Below(6);
      std::vector<std::string> run;
      for (uint64_t i = 0; i < count; ++i) run.push_back(std::to_string(from + i));
      return absl::StrCat("counting: ", absl::StrJoin(run, " "), ".");
    }
  }
}

}  // namespace

std::vector<std::string> MakeSyntheticCorpus(int lines, uint64_t seed) {
  Draw d(seed);
  std::vector<std::string> out;
  out.reserve(static_cast<size_t>(lines));
  for (int i = 0; i < lines; ++i) out.push_back(Sentence(d));
  return out;
}

absl::Status WriteCorpus(const std::string& path, const std::vector<std::string>& lines) {
  return base::WriteFileAtomically(path, absl::StrJoin(lines, "\n") + "\n");
}

absl::StatusOr<text::LlamaTokenizer> BuiltinTokenizer(const std::vector<std::string>& corpus) {
  std::string model, error;
  text::SentencePieceTrainOptions options;
  options.vocab_size = 512;
  options.layout = text::SentencePieceLayout::kLlama;
  if (!text::TrainSentencePieceModel(corpus, options, &model, &error)) {
    return absl::InternalError("training the demo's SentencePiece model: " + error);
  }
  return text::LlamaTokenizer::Create(std::move(model));
}

models::llama::LlamaConfig BuiltinLlamaConfig(int64_t vocab_size) {
  models::llama::LlamaConfig c;
  c.vocab_size = vocab_size;
  c.hidden_size = 128;
  c.intermediate_size = 344;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.max_position_embeddings = 256;
  c.rms_norm_eps = 1e-5;
  c.tie_word_embeddings = true;
  return c;
}

}  // namespace loom::examples::clm
