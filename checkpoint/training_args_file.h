// training_args.bin: the resolved arguments as transformers 4.38-4.41's Trainer._save writes
// them, torch.save(self.args): a pickled transformers.training_args.TrainingArguments object
// (Seq2SeqTrainingArguments of transformers.training_args_seq2seq with
// SerializeOptions::seq2seq), which Python's torch.load(path, weights_only=False) rebuilds as
// that class where transformers is installed.
//
// Contract:
//   TrainingArgsToPickle / SaveTrainingArgs write a torch.save zip archive (records
//   archive/data.pkl, archive/version) whose pickle (python_pickle_writer.h) is the object with
//   the __dict__ HF's __post_init__ leaves, in HF's field order (args::ToDict's), the values of
//   to_dict() except:
//     eval_strategy, logging_strategy, save_strategy   transformers.trainer_utils.IntervalStrategy
//     lr_scheduler_type                                 transformers.trainer_utils.SchedulerType
//     hub_strategy                                      transformers.trainer_utils.HubStrategy
//     optim                                  transformers.training_args.OptimizerNames
//     fsdp   a list of transformers.trainer_utils.FSDPOption; debug a list of
//            transformers.debug_utils.DebugOption
//     accelerator_config  a transformers.trainer_pt_utils.AcceleratorConfig of to_dict()'s keys
//     *_token   None: tokens are never written (args::ToDict's guarantee; HF pickles them)
//   then `_n_gpu`: 0 with use_cpu / no_cuda or without CUDA, else 1 (loom runs one device per
//   process, as HF's distributed runs do).
//   Deviations from HF's file: HF's __dict__ also holds what _setup_devices caches
//   (distributed_state, an accelerate PartialState; __cached__setup_devices, a torch.device)
//   and deepspeed_plugin / hf_deepspeed_config objects; loom leaves them out (device and plugin
//   objects of the saving process; in Python, args.device / args.n_gpu recompute them), and
//   writes enums as Class(value) (Python 3.8-3.10's pickling) where Python >= 3.11 writes
//   getattr(Class, 'NAME'); both load the same member.
//
//   TrainingArgsFromPickle / LoadTrainingArgs read (python_unpickler.h, with
//   UnpickleOptions::hf_training_arguments):
//     - what SaveTrainingArgs writes;
//     - a training_args.bin of transformers 4.38 / 4.41's Trainer (Python 3.8+): the
//       TrainingArguments' fields; _n_gpu, distributed_state, __cached__setup_devices,
//       deepspeed_plugin and hf_deepspeed_config dropped, and every *_token field read as unset
//       (a real token in the file is never kept);
//     - loom's earlier training_args.bin, a torch pickle of a plain dict (to_dict()'s values,
//       written by LibTorch's pickler, its TorchScript type tags read and dropped).
//   Keys that are not fields are InvalidArgument (args::FromDict); bytes the reader refuses
//   are DataLoss naming `source` and the reason.
//
// Example:
//   RETURN_IF_ERROR(SaveTrainingArgs(args, dir + "/training_args.bin"));
//   args::TrainingArguments back;
//   RETURN_IF_ERROR(LoadTrainingArgs(dir + "/training_args.bin", &back));
#ifndef LOOM_CHECKPOINT_TRAINING_ARGS_FILE_H_
#define LOOM_CHECKPOINT_TRAINING_ARGS_FILE_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "args/serialize.h"
#include "google/protobuf/message.h"

namespace loom::checkpoint {

// The file's bytes (the torch.save archive), and the inverse.
absl::StatusOr<std::string> TrainingArgsToPickle(const google::protobuf::Message& args,
                                                 const args::SerializeOptions& options = {});
absl::Status TrainingArgsFromPickle(const std::string& bytes, const std::string& source,
                                    google::protobuf::Message* args,
                                    const args::SerializeOptions& options = {});

// Atomic write (base::WriteFileAtomically) / read of the file.
absl::Status SaveTrainingArgs(const google::protobuf::Message& args, const std::string& path,
                              const args::SerializeOptions& options = {});
absl::Status LoadTrainingArgs(const std::string& path, google::protobuf::Message* args,
                              const args::SerializeOptions& options = {});

}  // namespace loom::checkpoint

#endif  // LOOM_CHECKPOINT_TRAINING_ARGS_FILE_H_
