// The data files run_translation reads (transformers 4.41's examples/pytorch/translation/
// run_translation.py with --train_file / --validation_file / --test_file): JSON Lines in the
// WMT16 layout of HF's datasets, one {"translation": {"en": "...", "ro": "..."}} object per line
// (a file holding one JSON array of such objects is read too, as datasets' json loader does).
// loom never downloads (--dataset_name is refused by the script).
//
// Contract:
//   ReadTranslationFile(path, flag, source_lang, target_lang) returns the (source, target)
//   pairs in file order. Errors are InvalidArgument naming the file and the 1-based line (or
//   record) and saying what to fix: an extension other than .json / .jsonl (HF: "`train_file`
//   should be a json file"), a line that is not a JSON object, a record without a
//   "translation" object, a translation without the source or target language (the languages
//   it has are listed) or whose text is not a string. An empty file gives no pairs.
//
// Example:
//   ASSIGN_OR_RETURN(std::vector<TranslationPair> train,
//                    ReadTranslationFile("wmt16_en_ro/train.json", "--train_file", "en", "ro"));
#ifndef LOOM_EXAMPLES_TRANSLATION_TRANSLATION_DATA_H_
#define LOOM_EXAMPLES_TRANSLATION_TRANSLATION_DATA_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace loom::examples::translation {

struct TranslationPair {
  std::string source;
  std::string target;
};

absl::StatusOr<std::vector<TranslationPair>> ReadTranslationFile(const std::string& path,
                                                                 const std::string& flag,
                                                                 const std::string& source_lang,
                                                                 const std::string& target_lang);

}  // namespace loom::examples::translation

#endif  // LOOM_EXAMPLES_TRANSLATION_TRANSLATION_DATA_H_
