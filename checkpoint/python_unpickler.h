// A reader for what Python's torch.save writes into .pt / .bin files, for the cases LibTorch
// 1.13's own unpickler (torch::pickle_load) rejects: OrderedDict state dicts (every
// module.state_dict()), one-element lists (pickle's APPEND), optimizer and scheduler state
// dicts. Hand-written: LibTorch has no such reader and Debian packages none.
//
// Contract: UnpickleTorchSave(bytes) / UnpickleTorchSaveFile(path) reads a torch.save zip
// archive (torch >= 1.6's default format; the records "<name>/data.pkl" and "<name>/data/<key>",
// through zip_reader.h's checked reader: a record's claimed size must be bytes the file holds,
// names with ".." or duplicates are refused, each record's CRC-32 is checked) and runs its
// pickle program (protocols 2 to 5) on a small stack machine
// that knows only the plain values torch state dicts hold:
//   None, bool, int (up to 64 bits), float, str, bytes (as a string), tuple, list, dict
//   collections.OrderedDict            a dict; its attributes (state_dict's _metadata) dropped
//   torch._utils._rebuild_tensor_v2    a tensor viewing its storage (storage_offset, size,
//                                      stride checked against the storage), requires_grad kept
//   torch._utils._rebuild_parameter    the tensor
//   torch.<Dtype>Storage               storages of float64/32/16, bfloat16, int64/32/16/8,
//                                      uint8, bool; each storage is read once, so tensors that
//                                      shared storage in Python share it here
//   torch.device("...")                the device string
//   torch.Size(t)                      the tuple of ints
//   set(list) / set()                  a list
// and, for DeepSpeed 0.13.5's checkpoints (sharding/deepspeed_checkpoint/deepspeed_checkpoint_layout.md):
//   ZeroStageEnum by name (getattr(ZeroStageEnum, 'gradients')) or value   the stage's int
//   LossScaler, DynamicLossScaler, fragment_address (NEWOBJ + BUILD)       a dict of their
//                                      attributes plus "__class__": the class's dotted name
// and, only when UnpickleOptions::numpy_arrays is set (np.random.get_state() in the RNG files
// transformers 4.38 `Trainer._save_rng_state` and accelerate 0.27 `save_accelerator_state`
// write; checkpoint/rng_state_file.h):
//   numpy.core.multiarray._reconstruct (or numpy 2's numpy._core.multiarray) of numpy.ndarray,
//   then BUILD (1, shape, dtype, fortran_order, data)
//                                      a dict {"__class__": "numpy.ndarray", "dtype": e.g.
//                                      "<u4", "shape": tuple, "fortran_order": bool, "data":
//                                      the raw bytes}; data's size must be shape's product
//                                      times the dtype's item size
//   numpy.dtype(descr, False, True), then BUILD (version, byteorder, ...)
//                                      a dict {"__class__": "numpy.dtype", "descr": e.g. "u4",
//                                      "byteorder": e.g. "<"}
//   _codecs.encode(text, 'latin1')     the bytes (how pickle protocol 2 writes bytes)
// and, only when UnpickleOptions::hf_training_arguments is set (training_args.bin as
// transformers 4.38-4.41's Trainer writes it, torch.save(TrainingArguments(...)), and as loom
// writes it; checkpoint/training_args_file.h):
//   transformers.training_args.TrainingArguments, transformers.training_args_seq2seq.
//   Seq2SeqTrainingArguments, transformers.trainer_pt_utils.AcceleratorConfig,
//   accelerate.state.PartialState (NEWOBJ + BUILD)
//                                      a dict of their attributes plus "__class__", as above
//   a member of transformers' IntervalStrategy, SchedulerType, HubStrategy, FSDPOption
//   (trainer_utils), OptimizerNames (training_args), DebugOption (debug_utils) or accelerate's
//   DistributedType, by value (Class('steps'), Python <= 3.10) or by name
//   (getattr(Class, 'STEPS'), Python >= 3.11)
//                                      its value, a string; a member not in transformers
//                                      4.38.2 / 4.41.2 (accelerate 0.27.2) is an error
// Anything else (another global: os.system, builtins.eval, subprocess.Popen, any class's
// __reduce__; a set, an object with state, the legacy non-zip format, a persistent id whose key
// is not a plain record key, a storage whose record is missing or of another size than its
// element count claims, malformed pickle bytes) is an InvalidArgument naming what was found and
// where; nothing from the file is ever called, the machine never reads out of bounds, and no
// storage is allocated before its record is known to hold that many bytes.
// A pickle whose values form a cycle (a dict or list set into itself through the memo, which
// Python's garbage collector would free) is an InvalidArgument too; its containers are cleared
// so nothing leaks (checkpoint/ivalue_cycles.h).
// Dicts come back as c10 GenericDicts with Any keys and values, lists as Any lists.
// loom runs no code from a pickle, so files from elsewhere are read like torch.load(weights_only=
// True) reads them. FindStorageRecord(zip, key, dtype, numel) is the storage check shared with
// lazy_torch_save.h.
//
// Example (torch_pickle.h's LoadPickle falls back to this):
//   ASSIGN_OR_RETURN(c10::IValue sd, UnpickleTorchSave(bytes));
//   // an RNG file (checkpoint/rng_state_file.cc):
//   ASSIGN_OR_RETURN(c10::IValue rng, UnpickleTorchSave(bytes, {.numpy_arrays = true}));
//   ASSIGN_OR_RETURN(c10::IValue args,
//                    UnpickleTorchSave(bytes, {.hf_training_arguments = true}));
//
// python_unpickler.cc stays one file (about 1070 lines): the pickle machine is one class, its
// opcode switch (Machine::Run) one flat dispatch and the longer opcodes its helpers; the
// bounds checks live beside the opcodes they guard.
#ifndef LOOM_CHECKPOINT_PYTHON_UNPICKLER_H_
#define LOOM_CHECKPOINT_PYTHON_UNPICKLER_H_

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "checkpoint/zip_reader.h"

namespace loom::checkpoint {

// Globals beyond torch state dicts' that one kind of file needs; each is off by default.
struct UnpickleOptions {
  bool numpy_arrays = false;           // numpy arrays and dtypes, _codecs.encode; see above
  bool hf_training_arguments = false;  // training_args.bin's classes and enums; see above
};

absl::StatusOr<c10::IValue> UnpickleTorchSave(absl::string_view zip_bytes);
absl::StatusOr<c10::IValue> UnpickleTorchSave(absl::string_view zip_bytes,
                                              const UnpickleOptions& options);
absl::StatusOr<c10::IValue> UnpickleTorchSave(const ZipReader& zip, const UnpickleOptions& options);
absl::StatusOr<c10::IValue> UnpickleTorchSaveFile(const std::string& path,
                                                  const UnpickleOptions& options = {});

// The record holding storage `key` of `numel` elements of `dtype`: InvalidArgument when the key
// is not a record key (letters, digits, '_'), the record is missing, or its size differs.
absl::StatusOr<const ZipReader::Record*> FindStorageRecord(const ZipReader& zip,
                                                          const std::string& key,
                                                          c10::ScalarType dtype, int64_t numel);

// The pickle machine alone: `load_storage(key, dtype, numel)` supplies the storage named by a
// persistent id ('storage', torch.<Dtype>Storage, key, location, numel) as a 1-D tensor.
using StorageLoader =
    std::function<absl::StatusOr<at::Tensor>(const std::string& key, c10::ScalarType, int64_t)>;
absl::StatusOr<c10::IValue> RunTorchPickle(absl::string_view pickle,
                                           const StorageLoader& load_storage);
absl::StatusOr<c10::IValue> RunTorchPickle(absl::string_view pickle,
                                           const StorageLoader& load_storage,
                                           const UnpickleOptions& options);

}  // namespace loom::checkpoint

#endif  // LOOM_CHECKPOINT_PYTHON_UNPICKLER_H_
