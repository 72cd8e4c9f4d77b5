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
  std::unordered_map<std::string, std::string> kwargs = {
      {"vocab_size", std::to_string(options.vocab_size)},
      {"hard_vocab_limit", "false"},
      {"character_coverage", "1.0"},
      {"num_threads", "1"},
      {"shuffle_input_sentence", "false"},
      {"minloglevel", "2"},
  };
  if (options.layout == SentencePieceLayout::kT5) {
    kwargs.insert({{"model_type", "unigram"}, {"pad_id", "0"}, {"eos_id", "1"}, {"unk_id", "2"},
                   {"bos_id", "-1"}, {"normalization_rule_name", "nmt_nfkc"}});
  } else {
    kwargs.insert({{"model_type", "bpe"}, {"unk_id", "0"}, {"bos_id", "1"}, {"eos_id", "2"},
                   {"pad_id", "-1"}, {"byte_fallback", "true"}, {"split_digits", "true"},
                   {"normalization_rule_name", "identity"}, {"remove_extra_whitespaces", "false"},
                   {"allow_whitespace_only_pieces", "true"}});
  }
  return api->train(sentences, kwargs, model, error);
}

}  // namespace loom::text
