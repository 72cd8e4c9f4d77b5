// training_args.bin: the resolved arguments as a torch pickle of HF's to_dict() (a dict of
// field name -> bool/int/float/str/None/list/dict), which Python's torch.load reads.
// (HF pickles the TrainingArguments object itself; loom writes the dict of its fields, which
// loads without transformers installed.) Tokens are never written (see serialize.h).
// This is the only //args target that links LibTorch.
//
// Example:
//   RETURN_IF_ERROR(SaveTrainingArgs(args, dir + "/training_args.bin"));
//   TrainingArguments back;
//   RETURN_IF_ERROR(LoadTrainingArgs(dir + "/training_args.bin", &back));
#ifndef LOOM_ARGS_TRAINING_ARGS_FILE_H_
#define LOOM_ARGS_TRAINING_ARGS_FILE_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "args/serialize.h"
#include "google/protobuf/message.h"

namespace loom::args {

// Bytes of the torch pickle, and the inverse.
absl::StatusOr<std::string> TrainingArgsToPickle(const google::protobuf::Message& args,
                                                 const SerializeOptions& options = {});
absl::Status TrainingArgsFromPickle(const std::string& bytes, const std::string& source,
                                    google::protobuf::Message* args,
                                    const SerializeOptions& options = {});

// Atomic write (base::WriteFileAtomically) / read of the file.
absl::Status SaveTrainingArgs(const google::protobuf::Message& args, const std::string& path,
                              const SerializeOptions& options = {});
absl::Status LoadTrainingArgs(const std::string& path, google::protobuf::Message* args,
                              const SerializeOptions& options = {});

}  // namespace loom::args

#endif  // LOOM_ARGS_TRAINING_ARGS_FILE_H_
