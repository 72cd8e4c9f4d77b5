#include "checkpoint/torch_pickle.h"

#include <ATen/core/enum_type.h>
#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/serialization/export.h>
#include <torch/csrc/jit/serialization/pickle.h>
#include <torch/csrc/jit/serialization/pickler.h>

#include <functional>
#include <unordered_set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "base/torch_status.h"
#include "checkpoint/atomic_file_writer.h"
#include "checkpoint/python_unpickler.h"

namespace loom::checkpoint {

namespace {

// `value` with every list made a list of Any, recursively: LibTorch's pickler writes a list of
// ints, floats, bools or tensors through torch.jit._pickle.build_intlist (and its siblings),
// a global that torch >= 2.6's default torch.load(weights_only=True) refuses; a list of Any is
// a plain pickle list, as Python's torch.save writes it.
c10::IValue WithPlainLists(const c10::IValue& value) {
  if (value.isList()) {
    c10::impl::GenericList out(c10::AnyType::get());
    for (const c10::IValue& e : value.toListRef()) out.push_back(WithPlainLists(e));
    return out;
  }
  if (value.isGenericDict()) {
    const c10::impl::GenericDict in = value.toGenericDict();
    c10::impl::GenericDict out(in.keyType(), c10::AnyType::get());
    for (const auto& entry : in) out.insert(entry.key(), WithPlainLists(entry.value()));
    return out;
  }
  if (value.isTuple()) {
    std::vector<c10::IValue> elements;
    for (const c10::IValue& e : value.toTupleRef().elements()) {
      elements.push_back(WithPlainLists(e));
    }
    return c10::ivalue::Tuple::create(std::move(elements));
  }
  return value;
}

// LibTorch's pickler as torch::jit::pickle_save drives it, except that containers carry no
// TorchScript types: with tags, every dict and list is wrapped in
// torch.jit._pickle.restore_type_tag, and typed lists are built by torch.jit._pickle globals,
// which Python's torch.load refuses by default since torch 2.6 (weights_only=True allows no
// such global). Python's own torch.save writes none of them.
std::vector<char> PickleWithoutTypeTags(const c10::IValue& value,
                                        std::vector<at::Tensor>* tensors) {
  const c10::IValue plain = WithPlainLists(value);
  std::vector<char> pickle;
  torch::jit::Pickler pickler(
      [&pickle](const char* buf, size_t size) { pickle.insert(pickle.end(), buf, buf + size); },
      /*tensor_table=*/nullptr, /*type_renamer=*/nullptr, /*memoized_class_types=*/nullptr,
      /*get_tensor_id=*/nullptr, /*tag_aggregates=*/false);
  pickler.protocol();
  pickler.pushIValue(plain);
  pickler.stop();
  *tensors = pickler.tensorData();
  return pickle;
}

// torch.save's zip archive of `value`, handed to `sink` piece by piece: the pickle (small:
// tensor metadata), then each storage's bytes straight from the tensor. Throws what LibTorch
// throws.
void WriteTorchSaveArchive(const c10::IValue& value,
                           const std::function<void(const void*, size_t)>& sink) {
  std::vector<at::Tensor> tensors;
  const std::vector<char> pickle = PickleWithoutTypeTags(value, &tensors);
  caffe2::serialize::PyTorchStreamWriter writer([&](const void* bytes, size_t len) -> size_t {
    sink(bytes, len);
    return len;
  });
  torch::jit::writeArchiveAndTensors("data", pickle.data(), pickle.size(), tensors, writer);
  writer.writeEndOfFile();
}

}  // namespace

absl::StatusOr<std::vector<char>> TorchSaveBytes(const c10::IValue& value) {
  std::vector<char> bytes;
  try {
    WriteTorchSaveArchive(value, [&bytes](const void* data, size_t len) {
      const char* p = static_cast<const char*>(data);
      bytes.insert(bytes.end(), p, p + len);
    });
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(e, absl::StatusCode::kInvalidArgument, "pickling the value");
  }
  return bytes;
}

absl::StatusOr<std::vector<char>> TorchSavePickle(const c10::IValue& value,
                                                  std::vector<at::Tensor>* storages) {
  try {
    return PickleWithoutTypeTags(value, storages);
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(e, absl::StatusCode::kInvalidArgument, "pickling the value");
  }
}

absl::Status SavePickle(const std::string& path, const c10::IValue& value) {
  ASSIGN_OR_RETURN(AtomicFileWriter out, AtomicFileWriter::Create(path));
  absl::Status appended = absl::OkStatus();
  try {
    // Always "written": a short count would make the archive writer throw, and throw again
    // from its destructor; the first failure is kept and reported once the archive is done.
    WriteTorchSaveArchive(value, [&](const void* bytes, size_t len) {
      if (appended.ok()) {
        appended = out.Append(absl::string_view(static_cast<const char*>(bytes), len));
      }
    });
  } catch (const std::exception& e) {
    RETURN_IF_ERROR(appended);
    return base::TorchErrorToStatus(e, absl::StatusCode::kInvalidArgument,
                                    absl::StrCat("pickling the value for ", path));
  }
  RETURN_IF_ERROR_CTX(appended, absl::StrCat("writing ", path));
  return out.Commit();
}

absl::StatusOr<c10::IValue> LoadPickle(const std::string& path) {
  absl::StatusOr<c10::IValue> value = UnpickleTorchSaveFile(path);
  if (value.ok() || value.status().code() != absl::StatusCode::kInvalidArgument) return value;
  return absl::InvalidArgumentError(absl::StrCat(
      value.status().message(),
      ". loom reads torch.save files of plain state dicts; save weights as safetensors "
      "(safetensors.torch.save_file) or re-save the file holding only dicts, lists, tuples, "
      "numbers, strings and tensors"));
}

c10::IValue PythonTorchSize(const std::vector<int64_t>& dims) {
  // LibTorch's pickler writes an enum as GLOBAL <its class>, its value, REDUCE: with the class
  // named torch.Size and the value the argument tuple (dims,), Python rebuilds
  // torch.Size((d0, d1, ...)), the bytes torch.save writes for a shape. EnumType admits only
  // int, float or str values in its declaration; the holder's value is not checked against it
  // and only the pickler reads it.
  static const c10::EnumTypePtr& kTorchSize = *new c10::EnumTypePtr(
      c10::EnumType::create(c10::QualifiedName("torch.Size"), c10::IntType::get(), {}, {}));
  std::vector<c10::IValue> elements(dims.begin(), dims.end());
  c10::IValue args = c10::ivalue::Tuple::create({c10::ivalue::Tuple::create(std::move(elements))});
  return c10::IValue(
      c10::make_intrusive<c10::ivalue::EnumHolder>(kTorchSize, "torch.Size", std::move(args)));
}

absl::Status SaveTorchStateDict(const std::string& path, const NamedTensors& tensors) {
  c10::impl::GenericDict dict(c10::StringType::get(), c10::TensorType::get());
  std::unordered_set<std::string> names;
  try {
    for (const auto& [name, tensor] : tensors) {
      if (!names.insert(name).second) {
        return absl::InvalidArgumentError(
            absl::StrCat("writing ", path, ": tensor name \"", name, "\" appears twice"));
      }
      if (!tensor.defined()) {
        return absl::InvalidArgumentError(
            absl::StrCat("writing ", path, ": tensor \"", name, "\" is undefined"));
      }
      dict.insert(name, tensor.detach().to(at::kCPU));
    }
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(e, absl::StatusCode::kInternal, absl::StrCat("writing ", path));
  }
  return SavePickle(path, dict);
}

absl::StatusOr<NamedTensors> LoadTorchStateDict(const std::string& path) {
  ASSIGN_OR_RETURN(const c10::IValue value, LoadPickle(path));
  if (!value.isGenericDict()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": holds a ", value.tagKind(),
                                                   ", not a state dict (a dict of tensors)"));
  }
  NamedTensors out;
  for (const auto& entry : value.toGenericDict()) {
    if (!entry.key().isString()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": a state dict key is a ", entry.key().tagKind(), ", not a string"));
    }
    const std::string name = entry.key().toStringRef();
    if (!entry.value().isTensor()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": entry \"", name, "\" is a ",
                                                     entry.value().tagKind(), ", not a tensor"));
    }
    out.emplace_back(name, entry.value().toTensor());
  }
  return out;
}

}  // namespace loom::checkpoint
