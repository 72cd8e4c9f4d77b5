// SentencePieceModel: the few calls loom's T5Tokenizer makes into Google's SentencePiece
// library (Debian's libsentencepiece 0.1.97), behind a header of standard types only.
// The library itself lives in libloom_sentencepiece.so (sentencepiece_backend.h says why);
// Load fails with the reason when that cannot be opened.
//
// Contract:
//   - Load(serialized, &error, add_dummy_prefix): the model from the bytes of a spiece.model /
//     tokenizer.model file; null with SentencePiece's message in *error when they are not one.
//     add_dummy_prefix false loads it with normalizer_spec.add_dummy_prefix off (no "▁" put
//     before the text), as transformers' non-legacy LlamaTokenizer does.
//   - Encode(text, &pieces, &error) is `sp_model.encode(text, out_type=str)`; PieceToId /
//     IdToPiece / Decode(pieces) are `piece_to_id` / `id_to_piece` / `decode(list of str)`.
//     IdToPiece requires 0 <= id < PieceSize() (the caller checks).
//
// Example:
//   std::string error;
//   std::unique_ptr<SentencePieceModel> sp = SentencePieceModel::Load(bytes, &error);
//   std::vector<std::string> pieces;
//   if (sp != nullptr && sp->Encode("Hello world", &pieces, &error)) { ... }
#ifndef LOOM_TEXT_SENTENCEPIECE_MODEL_H_
#define LOOM_TEXT_SENTENCEPIECE_MODEL_H_

#include <memory>
#include <string>
#include <vector>

namespace loom::text {
class SentencePieceProcessorBackend;
}  // namespace loom::text

namespace loom::text {

class SentencePieceModel {
 public:
  static std::unique_ptr<SentencePieceModel> Load(const std::string& serialized,
                                                  std::string* error,
                                                  bool add_dummy_prefix = true);
  ~SentencePieceModel();

  int PieceSize() const;
  int UnkId() const;
  int PieceToId(const std::string& piece) const;
  std::string IdToPiece(int id) const;
  bool Encode(const std::string& text, std::vector<std::string>* pieces, std::string* error) const;
  std::string Decode(const std::vector<std::string>& pieces) const;

 private:
  SentencePieceModel() = default;
  std::unique_ptr<SentencePieceProcessorBackend> sp_;
};

}  // namespace loom::text

#endif  // LOOM_TEXT_SENTENCEPIECE_MODEL_H_
