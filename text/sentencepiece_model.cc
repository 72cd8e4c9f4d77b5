// Includes no SentencePiece header: the library is reached through sentencepiece_backend.h.
#include "text/sentencepiece_model.h"

#include "text/sentencepiece_backend.h"

namespace loom::text {

std::unique_ptr<SentencePieceModel> SentencePieceModel::Load(const std::string& serialized,
                                                             std::string* error) {
  const SentencePieceApi* api = LoadSentencePieceApi(error);
  if (api == nullptr) return nullptr;
  std::unique_ptr<SentencePieceProcessorBackend> sp(api->load(serialized, error));
  if (sp == nullptr) return nullptr;
  std::unique_ptr<SentencePieceModel> model(new SentencePieceModel());
  model->sp_ = std::move(sp);
  return model;
}

SentencePieceModel::~SentencePieceModel() = default;

int SentencePieceModel::PieceSize() const { return sp_->PieceSize(); }
int SentencePieceModel::UnkId() const { return sp_->UnkId(); }
int SentencePieceModel::PieceToId(const std::string& piece) const { return sp_->PieceToId(piece); }
std::string SentencePieceModel::IdToPiece(int id) const { return sp_->IdToPiece(id); }

bool SentencePieceModel::Encode(const std::string& text, std::vector<std::string>* pieces,
                                std::string* error) const {
  return sp_->Encode(text, pieces, error);
}

std::string SentencePieceModel::Decode(const std::vector<std::string>& pieces) const {
  return sp_->Decode(pieces);
}

}  // namespace loom::text
