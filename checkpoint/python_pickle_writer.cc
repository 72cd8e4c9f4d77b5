#include "checkpoint/python_pickle_writer.h"

#include <caffe2/serialize/inline_container.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"
#include "base/torch_status.h"

namespace loom::checkpoint {
namespace {

// Python's pickle (its C implementation, _pickle) writes a list's or dict's items in batches of
// this many, each MARK ... APPENDS / SETITEMS, except a single item: APPEND / SETITEM.
constexpr size_t kBatchSize = 1000;

bool IsUtf8(absl::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<unsigned char>(s[i]);
    int more = 0;
    uint32_t cp = 0;
    if (b < 0x80) {
      ++i;
      continue;
    } else if ((b & 0xE0) == 0xC0) {
      more = 1, cp = b & 0x1F;
    } else if ((b & 0xF0) == 0xE0) {
      more = 2, cp = b & 0x0F;
    } else if ((b & 0xF8) == 0xF0) {
      more = 3, cp = b & 0x07;
    } else {
      return false;
    }
    if (s.size() - i <= static_cast<size_t>(more)) return false;  // truncated sequence
    for (int k = 1; k <= more; ++k) {
      const auto c = static_cast<unsigned char>(s[i + k]);
      if ((c & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (c & 0x3F);
    }
    // Overlong forms, surrogates and code points past U+10FFFF are not UTF-8.
    constexpr uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[more] || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) return false;
    i += more + 1;
  }
  return true;
}

bool IsDottedIdentifier(absl::string_view name) {
  if (name.empty()) return false;
  for (absl::string_view part : absl::StrSplit(name, '.')) {
    if (part.empty() || (part[0] >= '0' && part[0] <= '9')) return false;
    for (char c : part) {
      if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            c == '_')) {
        return false;
      }
    }
  }
  return true;
}

void AppendLe(std::string* out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

class Writer {
 public:
  absl::StatusOr<std::string> Program(const PythonValue& value) {
    out_.append("\x80\x02", 2);  // PROTO 2
    RETURN_IF_ERROR(Write(value));
    out_.push_back('.');  // STOP
    return std::move(out_);
  }

 private:
  absl::Status Write(const PythonValue& v);
  void Int(int64_t i);
  void Float(double d);
  absl::Status Str(absl::string_view s);
  absl::Status Global(const std::string& module, const std::string& cls);
  absl::Status List(const std::vector<PythonValue>& items);
  absl::Status Dict(const std::vector<std::pair<std::string, PythonValue>>& entries);

  std::string out_;
};

absl::Status Writer::Write(const PythonValue& v) {
  switch (v.kind()) {
    case PythonValue::Kind::kNone:
      out_.push_back('N');
      return absl::OkStatus();
    case PythonValue::Kind::kBool:
      out_.push_back(v.bool_value() ? '\x88' : '\x89');  // NEWTRUE / NEWFALSE
      return absl::OkStatus();
    case PythonValue::Kind::kInt:
      Int(v.int_value());
      return absl::OkStatus();
    case PythonValue::Kind::kFloat:
      Float(v.float_value());
      return absl::OkStatus();
    case PythonValue::Kind::kStr:
      return Str(v.str());
    case PythonValue::Kind::kList:
      return List(v.items());
    case PythonValue::Kind::kDict:
      return Dict(v.entries());
    case PythonValue::Kind::kEnum:  // module.cls(value): GLOBAL, (value,), REDUCE
      RETURN_IF_ERROR(Global(v.module(), v.cls()));
      RETURN_IF_ERROR(Write(v.items().at(0)));
      out_.append("\x85R", 2);  // TUPLE1, REDUCE
      return absl::OkStatus();
    case PythonValue::Kind::kObject:  // cls.__new__(cls), then __dict__.update(state)
      RETURN_IF_ERROR(Global(v.module(), v.cls()));
      out_.append(")\x81", 2);  // EMPTY_TUPLE, NEWOBJ
      RETURN_IF_ERROR(Dict(v.entries()));
      out_.push_back('b');  // BUILD
      return absl::OkStatus();
  }
  return absl::InternalError("unknown PythonValue kind");
}

// The narrowest of BININT1, BININT2, BININT, LONG1, as Python's save_long picks.
void Writer::Int(int64_t i) {
  if (i >= 0 && i <= 0xFF) {
    out_.push_back('K');
    AppendLe(&out_, static_cast<uint64_t>(i), 1);
  } else if (i >= 0 && i <= 0xFFFF) {
    out_.push_back('M');
    AppendLe(&out_, static_cast<uint64_t>(i), 2);
  } else if (i >= INT32_MIN && i <= INT32_MAX) {
    out_.push_back('J');
    AppendLe(&out_, static_cast<uint64_t>(i), 4);
  } else {
    // LONG1: the shortest little-endian two's complement that keeps the sign.
    int n = 8;
    while (n > 1) {
      const int64_t shifted = i >> (8 * (n - 1) - 1);  // the top byte and the next sign bit
      if (shifted != 0 && shifted != -1) break;
      --n;
    }
    out_.push_back('\x8a');
    out_.push_back(static_cast<char>(n));
    AppendLe(&out_, static_cast<uint64_t>(i), n);
  }
}

void Writer::Float(double d) {  // BINFLOAT: big-endian IEEE 754 double
  uint64_t u;
  std::memcpy(&u, &d, sizeof(u));
  out_.push_back('G');
  for (int i = 7; i >= 0; --i) out_.push_back(static_cast<char>((u >> (8 * i)) & 0xFF));
}

absl::Status Writer::Str(absl::string_view s) {
  if (!IsUtf8(s)) return absl::InvalidArgumentError("pickling a str that is not valid UTF-8");
  if (s.size() > UINT32_MAX) return absl::InvalidArgumentError("pickling a str of 4 GiB or more");
  out_.push_back('X');  // BINUNICODE
  AppendLe(&out_, s.size(), 4);
  out_.append(s.data(), s.size());
  return absl::OkStatus();
}

absl::Status Writer::Global(const std::string& module, const std::string& cls) {
  if (!IsDottedIdentifier(module) || !IsDottedIdentifier(cls)) {
    return absl::InvalidArgumentError(
        absl::StrCat("pickling the class '", module, "' '", cls, "': not a Python name"));
  }
  absl::StrAppend(&out_, "c", module, "\n", cls, "\n");
  return absl::OkStatus();
}

absl::Status Writer::List(const std::vector<PythonValue>& items) {
  out_.push_back(']');  // EMPTY_LIST
  for (size_t start = 0; start < items.size(); start += kBatchSize) {
    const size_t n = std::min(kBatchSize, items.size() - start);
    if (items.size() > 1) out_.push_back('(');  // MARK
    for (size_t i = start; i < start + n; ++i) RETURN_IF_ERROR(Write(items[i]));
    out_.push_back(items.size() > 1 ? 'e' : 'a');  // APPENDS / APPEND
  }
  return absl::OkStatus();
}

absl::Status Writer::Dict(const std::vector<std::pair<std::string, PythonValue>>& entries) {
  out_.push_back('}');  // EMPTY_DICT
  for (size_t start = 0; start < entries.size(); start += kBatchSize) {
    const size_t n = std::min(kBatchSize, entries.size() - start);
    if (entries.size() > 1) out_.push_back('(');  // MARK
    for (size_t i = start; i < start + n; ++i) {
      RETURN_IF_ERROR(Str(entries[i].first));
      RETURN_IF_ERROR(Write(entries[i].second));
    }
    out_.push_back(entries.size() > 1 ? 'u' : 's');  // SETITEMS / SETITEM
  }
  return absl::OkStatus();
}

}  // namespace

PythonValue PythonValue::Bool(bool b) {
  PythonValue v;
  v.kind_ = Kind::kBool;
  v.bool_ = b;
  return v;
}

PythonValue PythonValue::Int(int64_t i) {
  PythonValue v;
  v.kind_ = Kind::kInt;
  v.int_ = i;
  return v;
}

PythonValue PythonValue::Float(double d) {
  PythonValue v;
  v.kind_ = Kind::kFloat;
  v.float_ = d;
  return v;
}

PythonValue PythonValue::Str(std::string s) {
  PythonValue v;
  v.kind_ = Kind::kStr;
  v.str_ = std::move(s);
  return v;
}

PythonValue PythonValue::List(std::vector<PythonValue> items) {
  PythonValue v;
  v.kind_ = Kind::kList;
  v.items_ = std::move(items);
  return v;
}

PythonValue PythonValue::Dict() {
  PythonValue v;
  v.kind_ = Kind::kDict;
  return v;
}

PythonValue PythonValue::Enum(std::string module, std::string cls, PythonValue value) {
  PythonValue v;
  v.kind_ = Kind::kEnum;
  v.module_ = std::move(module);
  v.cls_ = std::move(cls);
  v.items_.push_back(std::move(value));
  return v;
}

PythonValue PythonValue::Object(std::string module, std::string cls, PythonValue state) {
  PythonValue v;
  v.kind_ = Kind::kObject;
  v.module_ = std::move(module);
  v.cls_ = std::move(cls);
  v.entries_ = std::move(state.entries_);
  return v;
}

PythonValue PythonValue::FromJson(const nlohmann::ordered_json& j) {
  if (j.is_boolean()) return Bool(j.get<bool>());
  if (j.is_number_integer()) return Int(j.get<int64_t>());
  if (j.is_number()) return Float(j.get<double>());
  if (j.is_string()) return Str(j.get<std::string>());
  if (j.is_array()) {
    std::vector<PythonValue> items;
    for (const auto& e : j) items.push_back(FromJson(e));
    return List(std::move(items));
  }
  if (j.is_object()) {
    PythonValue d = Dict();
    for (const auto& [key, e] : j.items()) d.Set(key, FromJson(e));
    return d;
  }
  return PythonValue();
}

void PythonValue::Set(const std::string& key, PythonValue value) {
  for (auto& [k, v] : entries_) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  entries_.emplace_back(key, std::move(value));
}

absl::StatusOr<std::string> PickleProtocol2(const PythonValue& value) {
  return Writer().Program(value);
}

absl::StatusOr<std::string> TorchSaveArchive(absl::string_view pickle) {
  std::string out;
  try {
    caffe2::serialize::PyTorchStreamWriter writer([&out](const void* bytes, size_t len) {
      out.append(static_cast<const char*>(bytes), len);
      return len;
    });
    writer.writeRecord("data.pkl", pickle.data(), pickle.size());
    writer.writeEndOfFile();
  } catch (const std::exception& e) {
    return base::TorchErrorToStatus(e, absl::StatusCode::kInternal,
                                    "writing the torch.save archive");
  }
  return out;
}

}  // namespace loom::checkpoint
