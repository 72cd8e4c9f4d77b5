// libloom_sentencepiece.so: SentencePiece behind sentencepiece_backend.h's function table. The
// only file that includes SentencePiece's headers (see sentencepiece_backend.h for why).
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "text/sentencepiece_backend.h"

namespace loom::text {
namespace {

class Processor : public SentencePieceProcessorBackend {
 public:
  sentencepiece::SentencePieceProcessor sp;
  int PieceSize() const override { return sp.GetPieceSize(); }
  int UnkId() const override { return sp.unk_id(); }
  int PieceToId(const std::string& piece) const override { return sp.PieceToId(piece); }
  std::string IdToPiece(int id) const override { return sp.IdToPiece(id); }
  bool Encode(const std::string& text, std::vector<std::string>* pieces,
              std::string* error) const override {
    pieces->clear();
    const sentencepiece::util::Status status = sp.Encode(text, pieces);
    if (!status.ok()) *error = status.ToString();
    return status.ok();
  }
  std::string Decode(const std::vector<std::string>& pieces) const override {
    std::string text;
    // Pieces of this model's own vocabulary (or unknown surfaces) always decode.
    sp.Decode(pieces, &text).IgnoreError();
    return text;
  }
};

SentencePieceProcessorBackend* Load(const std::string& serialized, std::string* error) {
  auto processor = std::make_unique<Processor>();
  const sentencepiece::util::Status status = processor->sp.LoadFromSerializedProto(serialized);
  if (!status.ok()) {
    *error = status.ToString();
    return nullptr;
  }
  return processor.release();
}

class VectorIterator : public sentencepiece::SentenceIterator {
 public:
  explicit VectorIterator(const std::vector<std::string>& sentences) : sentences_(sentences) {}
  bool done() const override { return next_ >= sentences_.size(); }
  void Next() override { ++next_; }
  const std::string& value() const override { return sentences_[next_]; }
  sentencepiece::util::Status status() const override { return sentencepiece::util::Status(); }

 private:
  const std::vector<std::string>& sentences_;
  size_t next_ = 0;
};

bool Train(const std::vector<std::string>& sentences,
           const std::unordered_map<std::string, std::string>& kwargs, std::string* model,
           std::string* error) {
  VectorIterator iterator(sentences);
  const sentencepiece::util::Status status =
      sentencepiece::SentencePieceTrainer::Train(kwargs, &iterator, model);
  if (!status.ok()) *error = status.ToString();
  return status.ok();
}

const SentencePieceApi kApi = {&Load, &Train};

}  // namespace
}  // namespace loom::text

extern "C" __attribute__((visibility("default"))) const loom::text::SentencePieceApi*
loom_sentencepiece_api() {
  return &loom::text::kApi;
}
