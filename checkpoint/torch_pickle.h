// Torch pickle files (.pt / .bin / .pth) through LibTorch's own pickler: what HF writes as
// pytorch_model.bin, optimizer.pt and scheduler.pt, readable by Python's torch.load.
//
// Contract:
//   SavePickle(path, value): torch::pickle_save(value) written atomically (temp file, fsync,
//     rename). The bytes are the zip-based format of torch.save, so Python's torch.load reads
//     them: c10 dicts become dicts (in insertion order, int keys kept), lists lists, tuples
//     tuples, tensors tensors (dtype, incl. bfloat16, and strides kept). Unlike
//     torch::pickle_save, containers carry no TorchScript type tags, so torch >= 2.6's default
//     torch.load(weights_only=True) accepts the file as it accepts Python's own torch.save.
//   TorchSaveBytes(value): the same bytes in memory (for files written with other data).
//   TorchSavePickle(value, &storages): the archive's data.pkl alone (its tensors' storages
//     named "0", "1", ... in `storages`' order, one tensor per storage): for writers of the
//     archive's records (torch_save_writer.h).
//   LoadPickle(path): the value, read by python_unpickler.h's checked reader only (it reads
//     what SavePickle, LibTorch's torch::pickle_save and Python's torch.save of state dicts
//     write). A file it refuses is an InvalidArgument naming the file, the reason and the way
//     out. Nothing in the file is ever run or trusted: LibTorch's own unpickler is not used,
//     since it allocates a record at the size the zip header claims.
//   PythonTorchSize(dims): a value SavePickle writes as Python's torch.Size(dims), exactly as
//     torch.save pickles a tensor's .shape (GLOBAL torch.Size applied to the tuple of dims), for
//     files Python code reads as shapes (DeepSpeed's param_shapes: zero_to_fp32.py calls
//     .numel() on them). Python's torch.load gives a torch.Size; LoadPickle gives back the
//     plain tuple of ints. It is only for writing: in memory it is a LibTorch enum holder
//     (LibTorch 1.13's pickler writes an enum as its class applied to its value, and has no
//     other way to name a Python class), which nothing else in loom should inspect.
//   SaveTorchStateDict(path, tensors) writes pytorch_model.bin: a dict name -> tensor in the
//     given order (Python's torch.load gives a dict, which model.load_state_dict and HF's
//     from_pretrained accept like the OrderedDict Python would have saved); tensors are
//     detached and copied to CPU. LoadTorchStateDict(path) reads one back (a dict of string to
//     tensor; anything else is an InvalidArgument naming the offending entry).
//
// Example:
//   RETURN_IF_ERROR(SaveTorchStateDict(dir + "/pytorch_model.bin", ModuleStateDict(model)));
//   ASSIGN_OR_RETURN(c10::IValue state, LoadPickle(dir + "/scheduler.pt"));
//   shapes.insert("w", PythonTorchSize({2, 3}));  // torch.Size([2, 3]) in Python
#ifndef LOOM_CHECKPOINT_TORCH_PICKLE_H_
#define LOOM_CHECKPOINT_TORCH_PICKLE_H_

#include <ATen/core/ivalue.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "checkpoint/named_tensors.h"

namespace loom::checkpoint {

absl::Status SavePickle(const std::string& path, const c10::IValue& value);
absl::StatusOr<c10::IValue> LoadPickle(const std::string& path);
absl::StatusOr<std::vector<char>> TorchSaveBytes(const c10::IValue& value);
absl::StatusOr<std::vector<char>> TorchSavePickle(const c10::IValue& value,
                                                  std::vector<at::Tensor>* storages);

c10::IValue PythonTorchSize(const std::vector<int64_t>& dims);

absl::Status SaveTorchStateDict(const std::string& path, const NamedTensors& tensors);
absl::StatusOr<NamedTensors> LoadTorchStateDict(const std::string& path);

}  // namespace loom::checkpoint

#endif  // LOOM_CHECKPOINT_TORCH_PICKLE_H_
