// The function table through which loom reaches Google's SentencePiece (Debian's
// libsentencepiece 0.1.97). That library carries its own copy of protobuf-lite 3.14 and exports
// its symbols, which clash with the protobuf 3.21 runtime loom's own protos link (one process
// cannot hold both in its global symbol scope: whichever loads first breaks the other). So
// SentencePiece lives in a small shared object, libloom_sentencepiece.so
// (sentencepiece_shim.cc), that LoadSentencePieceApi opens with RTLD_LOCAL | RTLD_DEEPBIND: the
// library binds to its own protobuf, the rest of the process never sees it. Only standard C++
// types and virtual calls cross the boundary. Written by hand: no packaged library isolates a
// shared object's symbols.
//
// Contract:
//   - LoadSentencePieceApi(&error) returns the table (loaded once per process), or null with the
//     reason in *error. The shim is searched in $LOOM_SENTENCEPIECE_SHIM, then in the
//     runfiles of the running binary or test as `loom/text/libloom_sentencepiece.so`, found
//     by Bazel's runfiles library ($RUNFILES_MANIFEST_FILE or $RUNFILES_DIR when set, else
//     <exe>.runfiles; also when loom is an external repository named `loom`), under
//     $TEST_SRCDIR and in <exe>.runfiles, then next to the executable.
//   - load(serialized, &error): a processor for a spiece.model's bytes, or null with
//     SentencePiece's message. train(...): text/sentencepiece_trainer.h's contract.
#ifndef LOOM_TEXT_SENTENCEPIECE_BACKEND_H_
#define LOOM_TEXT_SENTENCEPIECE_BACKEND_H_

#include <string>
#include <unordered_map>
#include <vector>

namespace loom::text {

class SentencePieceProcessorBackend {
 public:
  virtual ~SentencePieceProcessorBackend() = default;
  virtual int PieceSize() const = 0;
  virtual int UnkId() const = 0;
  virtual int PieceToId(const std::string& piece) const = 0;
  virtual std::string IdToPiece(int id) const = 0;
  virtual bool Encode(const std::string& text, std::vector<std::string>* pieces,
                      std::string* error) const = 0;
  virtual std::string Decode(const std::vector<std::string>& pieces) const = 0;
};

struct SentencePieceApi {
  SentencePieceProcessorBackend* (*load)(const std::string& serialized, std::string* error);
  bool (*train)(const std::vector<std::string>& sentences,
                const std::unordered_map<std::string, std::string>& kwargs, std::string* model,
                std::string* error);
};

const SentencePieceApi* LoadSentencePieceApi(std::string* error);

}  // namespace loom::text

// The shim's one exported symbol.
extern "C" const loom::text::SentencePieceApi* loom_sentencepiece_api();

#endif  // LOOM_TEXT_SENTENCEPIECE_BACKEND_H_
