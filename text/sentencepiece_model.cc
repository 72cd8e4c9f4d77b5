// Includes no abseil header: see sentencepiece_model.h.
#include "text/sentencepiece_model.h"

#include <sentencepiece_processor.h>

namespace loom::text {

std::unique_ptr<SentencePieceModel> SentencePieceModel::Load(const std::string& serialized,
                                                             std::string* error) {
  std::unique_ptr<SentencePieceModel> model(new SentencePieceModel());
  model->sp_ = std::make_unique<sentencepiece::SentencePieceProcessor>();
  const sentencepiece::util::Status status = model->sp_->LoadFromSerializedProto(serialized);
  if (!status.ok()) {
    *error = status.ToString();
    return nullptr;
  }
  return model;
}

SentencePieceModel::~SentencePieceModel() = default;

int SentencePieceModel::PieceSize() const { return sp_->GetPieceSize(); }
int SentencePieceModel::UnkId() const { return sp_->unk_id(); }
int SentencePieceModel::PieceToId(const std::string& piece) const { return sp_->PieceToId(piece); }
std::string SentencePieceModel::IdToPiece(int id) const { return sp_->IdToPiece(id); }

bool SentencePieceModel::Encode(const std::string& text, std::vector<std::string>* pieces,
                                std::string* error) const {
  pieces->clear();
  const sentencepiece::util::Status status = sp_->Encode(text, pieces);
  if (!status.ok()) *error = status.ToString();
  return status.ok();
}

std::string SentencePieceModel::Decode(const std::vector<std::string>& pieces) const {
  std::string text;
  // Pieces of this model's own vocabulary (or unknown surfaces) always decode.
  sp_->Decode(pieces, &text).IgnoreError();
  return text;
}

}  // namespace loom::text
