// Includes no SentencePiece header: the trainer is reached through sentencepiece_backend.h.
#include "text/sentencepiece_trainer.h"

#include <string>
#include <unordered_map>
#include <vector>

#include "text/sentencepiece_backend.h"

namespace loom::text {

bool TrainSentencePieceModel(const std::vector<std::string>& sentences,
                             const SentencePieceTrainOptions& options, std::string* model,
                             std::string* error) {
  if (sentences.empty()) {
    *error = "no sentences to train a SentencePiece model on";
    return false;
  }
  const SentencePieceApi* api = LoadSentencePieceApi(error);
  if (api == nullptr) return false;
  const std::unordered_map<std::string, std::string> kwargs = {
      {"model_type", "unigram"},
      {"vocab_size", std::to_string(options.vocab_size)},
      {"hard_vocab_limit", "false"},
      {"pad_id", "0"},
      {"eos_id", "1"},
      {"unk_id", "2"},
      {"bos_id", "-1"},
      {"character_coverage", "1.0"},
      {"normalization_rule_name", "nmt_nfkc"},
      {"num_threads", "1"},
      {"shuffle_input_sentence", "false"},
      {"minloglevel", "2"},
  };
  return api->train(sentences, kwargs, model, error);
}

}  // namespace loom::text
