// Includes no SentencePiece header: the library is reached through sentencepiece_backend.h.
#include "text/sentencepiece_model.h"

#include <string>

#include "text/sentencepiece_backend.h"

namespace loom::text {

namespace {

// A serialized ModelProto field 3 (normalizer_spec) holding only field 3 (add_dummy_prefix) =
// false. Protocol buffers merge a repeated embedded message into the earlier one and let the
// last value of a scalar win, so appending it to a model turns the dummy prefix off and keeps
// everything else (what transformers does with the parsed proto for non-legacy Llama).
constexpr char kNoDummyPrefix[] = {0x1A, 0x02, 0x18, 0x00};

}  // namespace

std::unique_ptr<SentencePieceModel> SentencePieceModel::Load(const std::string& serialized,
                                                             std::string* error,
                                                             bool add_dummy_prefix) {
  const SentencePieceApi* api = LoadSentencePieceApi(error);
  if (api == nullptr) return nullptr;
  const std::string bytes =
      add_dummy_prefix ? serialized
                       : serialized + std::string(kNoDummyPrefix, sizeof(kNoDummyPrefix));
  std::unique_ptr<SentencePieceProcessorBackend> sp(api->load(bytes, error));
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
