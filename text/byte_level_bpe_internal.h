// The parsed state of a ByteLevelBpeTokenizer (byte_level_bpe.h), shared by the file that reads
// tokenizer.json (byte_level_bpe_json.cc) and the one that tokenizes (byte_level_bpe.cc).
// Internal to //text:byte_level_bpe.
#ifndef LOOM_TEXT_BYTE_LEVEL_BPE_INTERNAL_H_
#define LOOM_TEXT_BYTE_LEVEL_BPE_INTERNAL_H_

#include <unicode/regex.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "text/byte_level_bpe.h"

namespace loom::text::bpe_internal {

struct AddedToken {
  std::string content;
  int64_t id = 0;
  bool lstrip = false, rstrip = false, special = false;
};

// One pre-tokenizer stage: a regex split (Isolated) or the byte-level mapping.
struct Stage {
  std::unique_ptr<icu::RegexPattern> regex;  // split by it when set
  bool byte_level = false;
  bool add_prefix_space = false;
};

// GPT-2's bytes_to_unicode: printable bytes map to themselves, the others to 256 + n.
std::vector<std::string> ByteToChar();

}  // namespace loom::text::bpe_internal

namespace loom::text {

struct ByteLevelBpeTokenizer::State {
  std::unordered_map<std::string, int64_t> vocab;
  std::vector<std::string> id_to_token;
  std::map<std::pair<std::string, std::string>, int64_t> ranks;
  bool ignore_merges = false;
  std::vector<bpe_internal::AddedToken> added;  // longest first
  std::vector<bpe_internal::Stage> stages;
  std::vector<int64_t> prefix_ids, suffix_ids;  // the template's special tokens
  std::vector<std::string> byte_to_char = bpe_internal::ByteToChar();
  std::unordered_map<std::string, uint8_t> char_to_byte;
  bool clean_up = true;  // transformers 4.41's default when tokenizer_config.json has no key
};

}  // namespace loom::text

#endif  // LOOM_TEXT_BYTE_LEVEL_BPE_INTERNAL_H_
