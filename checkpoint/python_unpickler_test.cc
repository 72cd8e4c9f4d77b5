#include "checkpoint/python_unpickler.h"

#include <ATen/ATen.h>
#include <caffe2/serialize/inline_container.h>
#include <torch/serialize.h>

#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "base/file_util.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::checkpoint {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::Eq;
using ::testing::HasSubstr;

// Pickle opcodes written from the pickle format description (Lib/pickletools.py's table).
std::string Str(const std::string& s) {  // BINUNICODE
  std::string out = "X";
  const uint32_t n = s.size();
  out.append(reinterpret_cast<const char*>(&n), 4);
  return out + s;
}
std::string Int1(uint8_t v) { return std::string("K") + static_cast<char>(v); }
std::string Float(double d) {  // BINFLOAT, big-endian
  uint64_t u;
  std::memcpy(&u, &d, 8);
  std::string out = "G";
  for (int i = 7; i >= 0; --i) out.push_back(static_cast<char>((u >> (8 * i)) & 0xff));
  return out;
}
std::string Global(const std::string& module, const std::string& name) {
  return "c" + module + "\n" + name + "\n";
}
const std::string kProto2 = "\x80\x02";
const std::string kMark = "(", kTuple = "t", kEmptyTuple = ")", kReduce = "R", kEmptyDict = "}",
                  kSetItems = "u", kStop = ".", kNewFalse = "\x89", kNewTrue = "\x88",
                  kTuple1 = "\x85", kTuple2 = "\x86", kEmptyList = "]", kAppend = "a",
                  kAppends = "e", kNone = "N", kBinPersId = "Q", kBuild = "b";
std::string Put(uint8_t i) { return std::string("q") + static_cast<char>(i); }
std::string GetMemo(uint8_t i) { return std::string("h") + static_cast<char>(i); }

// _rebuild_tensor_v2(('storage', torch.FloatStorage, key, 'cpu', numel), offset, size,
// stride, requires_grad, OrderedDict()), each size and stride a 1-tuple.
std::string RebuildFloat(const std::string& key, int numel, int offset, int size, int stride) {
  return Global("torch._utils", "_rebuild_tensor_v2") + kMark + kMark + Str("storage") +
         Global("torch", "FloatStorage") + Str(key) + Str("cpu") + Int1(numel) + kTuple +
         kBinPersId + Int1(offset) + Int1(size) + kTuple1 + Int1(stride) + kTuple1 + kNewFalse +
         Global("collections", "OrderedDict") + kEmptyTuple + kReduce + kTuple + kReduce;
}

StorageLoader Storages(std::map<std::string, at::Tensor> storages, int* loads = nullptr) {
  return [storages, loads](const std::string& key, c10::ScalarType dtype,
                           int64_t numel) -> absl::StatusOr<at::Tensor> {
    if (loads != nullptr) ++*loads;
    auto it = storages.find(key);
    if (it == storages.end() || it->second.scalar_type() != dtype || it->second.numel() != numel) {
      return absl::NotFoundError("no storage " + key);
    }
    return it->second;
  };
}

TEST(RunTorchPickleTest, OrderedDictStateDictWithSharedStorage) {
  // OrderedDict([("tied.a", view [0:3] of storage 0), ("tied.b", view [2:4] of storage 0)])
  // with state_dict's _metadata attribute, as Python's torch.save writes it.
  const std::string program =
      kProto2 + Global("collections", "OrderedDict") + Put(0) + kEmptyTuple + kReduce + Put(1) +
      kMark + Str("tied.a") + RebuildFloat("0", 5, 0, 3, 1) + Str("tied.b") +
      RebuildFloat("0", 5, 2, 2, 1) + kSetItems + kEmptyDict + Str("_metadata") + GetMemo(0) +
      kEmptyTuple + kReduce + "s" + kBuild + kStop;
  int loads = 0;
  ASSERT_OK_AND_ASSIGN(
      c10::IValue v, RunTorchPickle(program, Storages({{"0", at::arange(5, at::kFloat)}}, &loads)));
  ASSERT_TRUE(v.isGenericDict());
  const auto dict = v.toGenericDict();
  ASSERT_EQ(dict.size(), 2u);
  const at::Tensor a = dict.at("tied.a").toTensor();
  const at::Tensor b = dict.at("tied.b").toTensor();
  EXPECT_TRUE(at::equal(a, at::tensor({0.0f, 1.0f, 2.0f})));
  EXPECT_TRUE(at::equal(b, at::tensor({2.0f, 3.0f})));
  EXPECT_EQ(static_cast<float*>(a.data_ptr()) + 2, b.data_ptr());  // one storage
  EXPECT_EQ(loads, 1);
  std::vector<std::string> keys;
  for (const auto& e : dict) keys.push_back(e.key().toStringRef());
  EXPECT_THAT(keys, ElementsAre("tied.a", "tied.b"));  // insertion order kept
}

// Lists nested 200,000 deep (each appended into the one below, bottom-up), and the same built
// top-down through the memo (a list appended into its parent before it gets its own child):
// refused naming the depth, and freed without recursing (a recursive free would overflow the
// stack). 100 deep is still read.
TEST(RunTorchPickleTest, DeepNestingIsRefusedAndFreedWithoutRecursion) {
  const int n = 200000;
  const std::string bottom_up =
      kProto2 + std::string(n, kEmptyList[0]) + std::string(n - 1, kAppend[0]) + kStop;
  EXPECT_THAT(RunTorchPickle(bottom_up, Storages({})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("the pickle nests containers 200000 deep")));
  // Top-down: [] put in memo 0; then n times: get memo 0, a new [] stored in memo 0 after it is
  // appended to the previous one. The first list stays on the stack as the result.
  std::string top_down = kProto2 + kEmptyList + Put(0);
  for (int i = 0; i < n; ++i) top_down += GetMemo(0) + kEmptyList + Put(0) + kAppend + "0";
  top_down += kStop;
  EXPECT_THAT(RunTorchPickle(top_down, Storages({})),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("nests containers")));
  const std::string hundred =
      kProto2 + std::string(100, kEmptyList[0]) + std::string(99, kAppend[0]) + kStop;
  EXPECT_OK(RunTorchPickle(hundred, Storages({})).status());
}

TEST(RunTorchPickleTest, OptimizerStyleValues) {
  // {'state': {0: {'step': 3, 'big': -2**40, 'v': [1.5]}},
  //  'param_groups': [{'betas': (0.9, 0.999), 'foreach': None, 'amsgrad': False,
  //                    'capturable': True, 'params': [0, 1]}]}
  const std::string long1 = std::string("\x8a\x06\x00\x00\x00\x00\x00\xff", 8);  // -2**40
  const std::string program =
      kProto2 + kEmptyDict + kMark + Str("state") + kEmptyDict + kMark + Int1(0) + kEmptyDict +
      kMark + Str("step") + Int1(3) + Str("big") + long1 + Str("v") + kEmptyList + Float(1.5) +
      kAppend + kSetItems + kSetItems + Str("param_groups") + kEmptyList + kEmptyDict + kMark +
      Str("betas") + Float(0.9) + Float(0.999) + kTuple2 + Str("foreach") + kNone + Str("amsgrad") +
      kNewFalse + Str("capturable") + kNewTrue + Str("params") + kEmptyList + kMark + Int1(0) +
      Int1(1) + kAppends + kSetItems + kAppend + kSetItems + kStop;
  ASSERT_OK_AND_ASSIGN(c10::IValue v, RunTorchPickle(program, Storages({})));
  const auto state = v.toGenericDict().at("state").toGenericDict().at(int64_t{0}).toGenericDict();
  EXPECT_EQ(state.at("step").toInt(), 3);
  EXPECT_EQ(state.at("big").toInt(), -(int64_t{1} << 40));
  EXPECT_EQ(state.at("v").toListRef().at(0).toDouble(), 1.5);
  const auto group = v.toGenericDict().at("param_groups").toListRef().at(0).toGenericDict();
  EXPECT_EQ(group.at("betas").toTupleRef().elements()[1].toDouble(), 0.999);
  EXPECT_TRUE(group.at("foreach").isNone());
  EXPECT_FALSE(group.at("amsgrad").toBool());
  EXPECT_TRUE(group.at("capturable").toBool());
  EXPECT_THAT(group.at("params").toListRef()[1].toInt(), Eq(1));
}

// np.random.get_state()'s key as torch.save (pickle protocol 2) writes a numpy array:
// _reconstruct(ndarray, (0,), _codecs.encode('b', 'latin1')), then BUILD with
// (1, shape, dtype('u4', False, True) built with (3, '<', ...), False, encode(data, 'latin1')).
std::string Latin1AsUtf8(const std::string& bytes) {  // what Python's str of those bytes is
  std::string out;
  for (unsigned char c : bytes) {
    if (c < 0x80) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back(static_cast<char>(0xC0 | (c >> 6)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    }
  }
  return out;
}
std::string Encode(const std::string& bytes) {
  return Global("_codecs", "encode") + Str(Latin1AsUtf8(bytes)) + Str("latin1") + kTuple2 + kReduce;
}
std::string NumpyArray(const std::string& descr, int n, const std::string& data,
                       const std::string& module = "numpy.core.multiarray") {
  return Global(module, "_reconstruct") + Global("numpy", "ndarray") + Int1(0) + kTuple1 +
         Encode("b") + "\x87" + kReduce + kMark + Int1(1) + Int1(n) + kTuple1 +
         Global("numpy", "dtype") + Str(descr) + kNewFalse + kNewTrue + "\x87" + kReduce + kMark +
         Int1(3) + Str("<") + kNone + kNone + kNone + "J\xff\xff\xff\xff" + "J\xff\xff\xff\xff" +
         Int1(0) + kTuple + kBuild + kNewFalse + Encode(data) + kTuple + kBuild;
}

TEST(RunTorchPickleTest, NumpyArraysOnlyWhenAsked) {
  const std::string data = std::string("\x01\x00\x00\x80\xff\xff\xff\xff\x00\x00\x00\x00", 12);
  const std::string program = kProto2 + NumpyArray("u4", 3, data) + kStop;
  ASSERT_OK_AND_ASSIGN(c10::IValue v,
                       RunTorchPickle(program, Storages({}), {.numpy_arrays = true}));
  const auto array = v.toGenericDict();
  EXPECT_EQ(array.at("__class__").toStringRef(), "numpy.ndarray");
  EXPECT_EQ(array.at("dtype").toStringRef(), "<u4");
  EXPECT_THAT(array.at("shape").toTupleRef().elements()[0].toInt(), Eq(3));
  EXPECT_FALSE(array.at("fortran_order").toBool());
  EXPECT_EQ(array.at("data").toStringRef(), data);
  // numpy 2's module path reads the same.
  EXPECT_OK(RunTorchPickle(kProto2 + NumpyArray("u4", 3, data, "numpy._core.multiarray") + kStop,
                           Storages({}), {.numpy_arrays = true}));

  // Without the option numpy's globals are refused like any other.
  EXPECT_THAT(RunTorchPickle(program, Storages({})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("the Python object _codecs.encode is not supported")));
}

TEST(RunTorchPickleTest, MalformedNumpyArraysAreErrors) {
  auto expect = [](const std::string& body, const std::string& message) {
    EXPECT_THAT(RunTorchPickle(kProto2 + body + kStop, Storages({}), {.numpy_arrays = true}),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(message)))
        << message;
  };
  expect(NumpyArray("u4", 3, std::string(11, 'x')), "a numpy array of 12 bytes holds 11");
  expect(NumpyArray("u4", 200, std::string(12, 'x')), "a numpy array of 800 bytes holds 12");
  expect(NumpyArray("O", 1, "x"), "numpy dtype 'O' is not a fixed-size number");
  expect(Global("_codecs", "encode") + Str("\xe2\x82\xac") + Str("latin1") + kTuple2 + kReduce,
         "_codecs.encode of text that is not latin-1");
  expect(Global("_codecs", "encode") + Str("\xc3") + Str("latin1") + kTuple2 + kReduce,
         "_codecs.encode of text that is not latin-1");
  expect(Global("_codecs", "encode") + Str("x") + Str("utf-8") + kTuple2 + kReduce,
         "_codecs.encode other than (text, 'latin1')");
  expect(Global("numpy.core.multiarray", "_reconstruct") + Global("numpy", "matrix") + Int1(0) +
             kTuple1 + Encode("b") + "\x87" + kReduce,
         "_reconstruct with unexpected arguments");
  expect(Global("numpy", "ndarray") + kEmptyTuple + kReduce,
         "the Python object numpy.ndarray is not supported");
  // An ndarray built with a state that is not numpy's.
  expect(Global("numpy.core.multiarray", "_reconstruct") + Global("numpy", "ndarray") + Int1(0) +
             kTuple1 + Encode("b") + "\x87" + kReduce + kMark + Int1(2) + kTuple + kBuild,
         "a numpy.ndarray state other than");

  // Every truncation and single-byte change of a good program: an error or a value, no crash.
  const std::string good =
      kProto2 + NumpyArray("u4", 2, std::string("\x01\x02\x03\x04\xf0\xf1\xf2\xf3", 8)) + kStop;
  for (size_t n = 0; n < good.size(); ++n) {
    (void)RunTorchPickle(good.substr(0, n), Storages({}), {.numpy_arrays = true});
    for (int delta : {1, 0x80}) {
      std::string mutated = good;
      mutated[n] = static_cast<char>(mutated[n] + delta);
      (void)RunTorchPickle(mutated, Storages({}), {.numpy_arrays = true});
    }
  }
}

TEST(RunTorchPickleTest, ErrorsSayWhatAndWhere) {
  auto expect = [](const std::string& program, const std::string& message) {
    EXPECT_THAT(RunTorchPickle(program, Storages({{"0", at::arange(5, at::kFloat)}})),
                StatusIs(absl::StatusCode::kInvalidArgument, Eq(message)))
        << program;
  };
  expect(kProto2 + Global("numpy.core.multiarray", "_reconstruct") + kEmptyTuple + kReduce + kStop,
         "pickle byte 39: the Python object numpy.core.multiarray._reconstruct is not supported "
         "(loom reads plain torch state dicts: dicts, lists, tuples, numbers, strings, tensors)");
  expect(kProto2 + Str("abc").substr(0, 6), "pickle byte 2: the pickle ends inside an opcode");
  expect(kProto2 + kStop, "pickle byte 2: stack underflow");
  expect(kProto2 + "\xff",
         "pickle byte 2: opcode 0xff is not supported (loom reads torch.save's "
         "pickle protocols 2 to 5)");
  expect(kProto2 + GetMemo(7) + kStop, "pickle byte 2: memo 7 is unset");
  expect(kProto2 + kEmptyList + Int1(1) + Int1(2) + "s" + kStop,
         "pickle byte 7: SETITEM(S) on something that is not a dict");
  expect(kProto2 + RebuildFloat("0", 5, 3, 3, 1) + kStop,
         "pickle byte 124: a tensor view reaches element 5 of a storage of 5");
  // size 2**62 + 1 with stride 4: the reach overflows.
  const std::string huge = std::string("\x8a\x08\x01\x00\x00\x00\x00\x00\x00\x40", 10);
  expect(kProto2 + Global("torch._utils", "_rebuild_tensor_v2") + kMark + kMark + Str("storage") +
             Global("torch", "FloatStorage") + Str("0") + Str("cpu") + Int1(5) + kTuple +
             kBinPersId + Int1(0) + huge + kTuple1 + Int1(4) + kTuple1 + kNewFalse + kEmptyDict +
             kTuple + kReduce + kStop,
         "pickle byte 106: a tensor's size and stride overflow 64 bits");
  expect(kProto2 + kMark + Str("storage") + Int1(1) + kTuple + kBinPersId + kStop,
         "pickle byte 18: a persistent id other than ('storage', type, key, location, numel)");
  expect(kProto2 + kEmptyDict + kEmptyList + kEmptyList + "s" + kStop,
         "pickle byte 5: a dict key of type GenericList");
  expect(kProto2 + kEmptyList + kEmptyDict + kBuild + kStop,
         "pickle byte 4: BUILD of an object other than a dict's attributes");
  // A dict set into itself through the memo: Python's garbage collector would free it, c10's
  // reference counts cannot (found by //checkpoint/fuzz:python_unpickler_fuzzer as a leak).
  expect(kProto2 + kEmptyDict + Put(0) + kMark + Str("self") + GetMemo(0) + "u" + kStop,
         "the pickle builds a container that holds itself (a cycle through the memo); loom reads "
         "no cyclic values (torch state dicts, optimizer, scheduler and RNG files have none)");
  // The same for a list appended to itself, then dropped from the stack and the memo: the
  // cycle is unreachable from the result but would still leak.
  expect(kProto2 + kEmptyList + Put(0) + GetMemo(0) + "a" + "0" + kEmptyDict + Put(0) + kStop,
         "the pickle builds a container that holds itself (a cycle through the memo); loom reads "
         "no cyclic values (torch state dicts, optimizer, scheduler and RNG files have none)");
  EXPECT_THAT(RunTorchPickle(kProto2 + RebuildFloat("9", 5, 0, 1, 1) + kStop,
                             Storages({{"0", at::arange(5, at::kFloat)}})),
              StatusIs(absl::StatusCode::kNotFound, Eq("no storage 9")));
}

// Random edits of valid programs never crash the machine (a deterministic check in the
// project's gcc build; //checkpoint/fuzz:python_unpickler_fuzzer is the libFuzzer target).
TEST(RunTorchPickleTest, MutatedProgramsGiveErrorsNotCrashes) {
  const std::string base = kProto2 + Global("collections", "OrderedDict") + Put(0) + kEmptyTuple +
                           kReduce + Put(1) + kMark + Str("a") + RebuildFloat("0", 5, 0, 3, 1) +
                           Str("b") + kEmptyList + Float(1.5) + kAppend + Str("c") + kMark +
                           Int1(1) + Int1(2) + kTuple + kSetItems + kStop;
  ASSERT_OK(RunTorchPickle(base, Storages({{"0", at::arange(5, at::kFloat)}})).status());
  std::mt19937 rng(20240601);
  int ok = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string p = base;
    const int edits = 1 + rng() % 4;
    for (int e = 0; e < edits && !p.empty(); ++e) {
      const size_t at = rng() % p.size();
      switch (rng() % 4) {
        case 0:
          p[at] = static_cast<char>(rng());
          break;
        case 1:
          p.insert(p.begin() + at, static_cast<char>(rng()));
          break;
        case 2:
          p.erase(at, 1 + rng() % 8);
          break;
        default:
          p.resize(at);
      }
    }
    ok += RunTorchPickle(p, Storages({{"0", at::arange(5, at::kFloat)}})).ok();
  }
  EXPECT_LT(ok, 20000);  // most edits break the program; none may crash it
}

// What DeepSpeed's optimizer files hold besides tensors: a LossScaler object (NEWOBJ + BUILD),
// ZeroStageEnum by member name (getattr) and by value, a torch.Size and a set.
std::string DeepSpeedValues() {
  const std::string kNewObj = "\x81";
  return kProto2 + kEmptyDict + Put(0) + kMark + Str("loss_scaler") +
         Global("deepspeed.runtime.fp16.loss_scaler", "LossScaler") + kEmptyTuple + kNewObj +
         kEmptyDict + kMark + Str("cur_scale") + Float(1.0) + Str("dynamic") + kNewFalse +
         kSetItems + kBuild + Str("zero_stage") + Global("__builtin__", "getattr") +
         Global("deepspeed.runtime.zero.config", "ZeroStageEnum") + Str("gradients") + kTuple2 +
         kReduce + Str("old_stage") + Global("deepspeed.runtime.zero.config", "ZeroStageEnum") +
         Int1(1) + kTuple1 + kReduce + Str("shape") + Global("torch", "Size") + Int1(3) + Int1(4) +
         kTuple2 + kTuple1 + kReduce + Str("names") + Global("__builtin__", "set") + kEmptyList +
         Str("x") + kAppend + kTuple1 + kReduce + kSetItems + kStop;
}

// 20,000 random edits of `base` (a byte changed, bytes erased, the end cut off) through the
// machine: each gives an error or a value, never a crash.
void RunMutations(const std::string& base, uint32_t seed, const UnpickleOptions& options) {
  std::mt19937 rng(seed);
  for (int i = 0; i < 20000; ++i) {
    std::string p = base;
    const size_t at = rng() % p.size();
    switch (rng() % 3) {
      case 0:
        p[at] = static_cast<char>(rng());
        break;
      case 1:
        p.erase(at, 1 + rng() % 8);
        break;
      default:
        p.resize(at);
    }
    (void)RunTorchPickle(p, Storages({}), options);
  }
}

TEST(RunTorchPickleTest, DeepSpeedCheckpointValues) {
  ASSERT_OK_AND_ASSIGN(c10::IValue v, RunTorchPickle(DeepSpeedValues(), Storages({})));
  const auto d = v.toGenericDict();
  const auto scaler = d.at("loss_scaler").toGenericDict();
  EXPECT_EQ(scaler.at("__class__").toStringRef(), "deepspeed.runtime.fp16.loss_scaler.LossScaler");
  EXPECT_EQ(scaler.at("cur_scale").toDouble(), 1.0);
  EXPECT_FALSE(scaler.at("dynamic").toBool());
  EXPECT_EQ(d.at("zero_stage").toInt(), 2);
  EXPECT_EQ(d.at("old_stage").toInt(), 1);
  const auto shape = d.at("shape").toTupleRef().elements();
  ASSERT_EQ(shape.size(), 2u);
  EXPECT_EQ(shape[1].toInt(), 4);
  EXPECT_EQ(d.at("names").toListRef()[0].toStringRef(), "x");
  // Other classes stay refused: instantiating one, or an unknown enum member.
  const std::string other = kProto2 + Global("os", "system") + kEmptyTuple + "\x81" + kStop;
  EXPECT_THAT(RunTorchPickle(other, Storages({})).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("os.system")));
  const std::string member = kProto2 + Global("__builtin__", "getattr") +
                             Global("deepspeed.runtime.zero.config", "ZeroStageEnum") +
                             Str("everything") + kTuple2 + kReduce + kStop;
  EXPECT_THAT(RunTorchPickle(member, Storages({})).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("everything")));
  const std::string getattr_other = kProto2 + Global("__builtin__", "getattr") +
                                    Global("os", "path") + Str("join") + kTuple2 + kReduce + kStop;
  EXPECT_FALSE(RunTorchPickle(getattr_other, Storages({})).ok());
}

TEST(RunTorchPickleTest, MutatedDeepSpeedProgramsGiveErrorsNotCrashes) {
  const std::string base = DeepSpeedValues();
  ASSERT_OK(RunTorchPickle(base, Storages({})).status());
  RunMutations(base, 20261125, UnpickleOptions());
}

// training_args.bin as transformers 4.41's Trainer writes it under Python 3.11 (memo puts kept,
// enums by name), with one enum by value as Python 3.10 and loom's writer write them.
std::string HfTrainingArguments() {
  const std::string newobj = "\x81";
  auto by_name = [](const std::string& module, const std::string& cls, const std::string& name) {
    return Global("__builtin__", "getattr") + Global(module, cls) + Str(name) + kTuple2 + kReduce;
  };
  return kProto2 + Global("transformers.training_args", "TrainingArguments") + Put(0) +
         kEmptyTuple + newobj + Put(1) + kEmptyDict + Put(2) + kMark + Str("output_dir") +
         Str("out") + Str("eval_strategy") +
         by_name("transformers.trainer_utils", "IntervalStrategy", "STEPS") + Str("learning_rate") +
         Float(2e-5) + Str("lr_scheduler_type") +
         Global("transformers.trainer_utils", "SchedulerType") + Str("cosine") + kTuple1 + kReduce +
         Str("fsdp") + kEmptyList + kMark +
         by_name("transformers.trainer_utils", "FSDPOption", "FULL_SHARD") +
         by_name("transformers.trainer_utils", "FSDPOption", "AUTO_WRAP") + kAppends +
         Str("debug") + kEmptyList +
         by_name("transformers.debug_utils", "DebugOption", "UNDERFLOW_OVERFLOW") + kAppend +
         Str("optim") + by_name("transformers.training_args", "OptimizerNames", "ADAMW_BNB") +
         Str("hub_strategy") + by_name("transformers.trainer_utils", "HubStrategy", "EVERY_SAVE") +
         Str("accelerator_config") + Global("transformers.trainer_pt_utils", "AcceleratorConfig") +
         kEmptyTuple + newobj + kEmptyDict + Str("even_batches") + kNewTrue + "s" + kBuild +
         Str("distributed_state") + Global("accelerate.state", "PartialState") + kEmptyTuple +
         newobj + kEmptyDict + kMark + Str("device") + Global("torch", "device") + Str("cpu") +
         kTuple1 + kReduce + Str("distributed_type") +
         by_name("accelerate.utils.dataclasses", "DistributedType", "NO") + kSetItems + kBuild +
         Str("_n_gpu") + Int1(0) + kSetItems + kBuild + kStop;
}

TEST(RunTorchPickleTest, HfTrainingArgumentsOnlyWhenAsked) {
  ASSERT_OK_AND_ASSIGN(c10::IValue v, RunTorchPickle(HfTrainingArguments(), Storages({}),
                                                     {.hf_training_arguments = true}));
  const auto d = v.toGenericDict();
  EXPECT_EQ(d.at("__class__").toStringRef(), "transformers.training_args.TrainingArguments");
  EXPECT_EQ(d.at("output_dir").toStringRef(), "out");
  EXPECT_EQ(d.at("eval_strategy").toStringRef(), "steps");
  EXPECT_EQ(d.at("learning_rate").toDouble(), 2e-5);
  EXPECT_EQ(d.at("lr_scheduler_type").toStringRef(), "cosine");
  const auto fsdp = d.at("fsdp").toListRef();
  ASSERT_EQ(fsdp.size(), 2u);
  EXPECT_EQ(fsdp[0].toStringRef(), "full_shard");
  EXPECT_EQ(fsdp[1].toStringRef(), "auto_wrap");
  EXPECT_EQ(d.at("debug").toListRef()[0].toStringRef(), "underflow_overflow");
  EXPECT_EQ(d.at("optim").toStringRef(), "adamw_bnb_8bit");  // the value, not the name
  EXPECT_EQ(d.at("hub_strategy").toStringRef(), "every_save");
  const auto accelerator = d.at("accelerator_config").toGenericDict();
  EXPECT_EQ(accelerator.at("__class__").toStringRef(),
            "transformers.trainer_pt_utils.AcceleratorConfig");
  EXPECT_TRUE(accelerator.at("even_batches").toBool());
  const auto state = d.at("distributed_state").toGenericDict();
  EXPECT_EQ(state.at("device").toStringRef(), "cpu");
  EXPECT_EQ(state.at("distributed_type").toStringRef(), "NO");
  EXPECT_EQ(d.at("_n_gpu").toInt(), 0);

  // Without the option the class is refused like any other.
  EXPECT_THAT(RunTorchPickle(HfTrainingArguments(), Storages({})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("transformers.training_args.TrainingArguments")));
}

TEST(RunTorchPickleTest, HfTrainingArgumentsAllowListOnly) {
  const UnpickleOptions hf{.hf_training_arguments = true};
  // Another transformers class, an unknown member by name or by value, a known class called
  // with something other than one string: errors naming them.
  EXPECT_THAT(RunTorchPickle(kProto2 + Global("transformers.trainer", "Trainer") + kEmptyTuple +
                                 "\x81" + kStop,
                             Storages({}), hf),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("transformers.trainer")));
  EXPECT_THAT(RunTorchPickle(kProto2 + Global("__builtin__", "getattr") +
                                 Global("transformers.trainer_utils", "IntervalStrategy") +
                                 Str("HOURLY") + kTuple2 + kReduce + kStop,
                             Storages({}), hf),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("member 'HOURLY'")));
  EXPECT_THAT(RunTorchPickle(kProto2 + Global("transformers.trainer_utils", "SchedulerType") +
                                 Str("LINEAR") + kTuple1 + kReduce + kStop,
                             Storages({}), hf),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("member value 'LINEAR'")));
  EXPECT_THAT(RunTorchPickle(kProto2 + Global("transformers.trainer_utils", "SchedulerType") +
                                 Int1(1) + kTuple1 + kReduce + kStop,
                             Storages({}), hf),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("one string")));
  EXPECT_FALSE(RunTorchPickle(kProto2 + Global("__builtin__", "getattr") + Global("os", "path") +
                                  Str("join") + kTuple2 + kReduce + kStop,
                              Storages({}), hf)
                   .ok());
}

TEST(RunTorchPickleTest, MutatedHfTrainingArgumentsGiveErrorsNotCrashes) {
  const std::string base = HfTrainingArguments();
  const UnpickleOptions hf{.hf_training_arguments = true};
  ASSERT_OK(RunTorchPickle(base, Storages({}), hf).status());
  RunMutations(base, 20261128, hf);
}

std::string Archive(const std::map<std::string, std::string>& records) {
  std::string out;
  caffe2::serialize::PyTorchStreamWriter writer([&out](const void* data, size_t n) {
    out.append(static_cast<const char*>(data), n);
    return n;
  });
  for (const auto& [name, bytes] : records) writer.writeRecord(name, bytes.data(), bytes.size());
  writer.writeEndOfFile();
  return out;
}

TEST(UnpickleTorchSaveTest, ReadsStoragesFromTheArchive) {
  const float values[] = {1.5f, -2.0f, 3.0f};
  const std::string program = kProto2 + RebuildFloat("0", 3, 1, 2, 1) + kStop;
  ASSERT_OK_AND_ASSIGN(
      c10::IValue v,
      UnpickleTorchSave(Archive(
          {{"data.pkl", program},
           {"data/0", std::string(reinterpret_cast<const char*>(values), sizeof(values))}})));
  EXPECT_TRUE(at::equal(v.toTensor(), at::tensor({-2.0f, 3.0f})));

  EXPECT_THAT(UnpickleTorchSave(Archive({{"data.pkl", program}, {"data/0", "12345678"}})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       Eq("storage 0 claims 3 elements of 4 bytes but its record holds 8 bytes")));
  EXPECT_THAT(
      UnpickleTorchSave(Archive({{"data.pkl", program}})),
      StatusIs(absl::StatusCode::kInvalidArgument, Eq("storage 0 is missing from the archive")));
  EXPECT_THAT(UnpickleTorchSave(Archive({{"other", "x"}})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       Eq("the archive has no data.pkl: not a torch.save file")));
  EXPECT_THAT(UnpickleTorchSave("\x80\x02\x8a\x0a"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("legacy torch.save format")));
  EXPECT_THAT(
      UnpickleTorchSave(std::string("PK\x03\x04garbage", 11)),
      StatusIs(absl::StatusCode::kInvalidArgument,
               Eq("not a readable torch.save zip archive: too short to be a zip archive")));
}

// LibTorch's own pickler (what loom's ZeRO checkpoint files go through) tags typed dicts and
// lists with torch.jit._pickle.restore_type_tag; the reader takes the object as it is.
TEST(UnpickleTorchSaveTest, ReadsWhatLibTorchsPicklerWrites) {
  c10::impl::GenericDict d(c10::StringType::get(), c10::AnyType::get());
  c10::impl::GenericList l(c10::AnyType::get());
  l.push_back(int64_t{3});
  l.push_back(at::tensor({1.0f, 2.0f}));
  d.insert("list", l);
  d.insert("shape", c10::ivalue::Tuple::create({int64_t{2}, int64_t{5}}));
  c10::impl::GenericDict inner(c10::IntType::get(), c10::AnyType::get());
  inner.insert(int64_t{0}, std::string("x"));
  d.insert("inner", inner);
  d.insert("none", c10::IValue());
  const std::vector<char> bytes = torch::pickle_save(d);
  ASSERT_OK_AND_ASSIGN(c10::IValue v,
                       UnpickleTorchSave(absl::string_view(bytes.data(), bytes.size())));
  ASSERT_TRUE(v.isGenericDict());
  const auto out = v.toGenericDict();
  const auto& list = out.at("list").toListRef();
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].toInt(), 3);
  EXPECT_TRUE(at::equal(list[1].toTensor(), at::tensor({1.0f, 2.0f})));
  EXPECT_EQ(out.at("shape").toTupleRef().elements()[1].toInt(), 5);
  EXPECT_EQ(out.at("inner").toGenericDict().at(int64_t{0}).toStringRef(), "x");
  EXPECT_TRUE(out.at("none").isNone());
}

TEST(UnpickleTorchSaveTest, NumpyArraysOnlyWhenAsked) {
  const std::string data = std::string("\x07\x00\x00\x00\xc4\xc1\x34\xf4", 8);
  const std::string program = kProto2 + NumpyArray("u4", 2, data) + kStop;
  EXPECT_THAT(UnpickleTorchSave(Archive({{"data.pkl", program}})),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("_codecs.encode")));
  ASSERT_OK_AND_ASSIGN(c10::IValue v,
                       UnpickleTorchSave(Archive({{"data.pkl", program}}), {.numpy_arrays = true}));
  EXPECT_EQ(v.toGenericDict().at("data").toStringRef(), data);
}

// A training_args.bin that transformers 4.38.2's and 4.41.2's Trainer wrote (testdata/
// make_hf_training_args_bin.py): every class and enum in it is on the allow-list.
TEST(UnpickleTorchSaveTest, ReadsTrainingArgsBinOfHfTrainer) {
  for (const std::string version : {"4.38.2", "4.41.2"}) {
    ASSERT_OK_AND_ASSIGN(std::string bytes, base::ReadFile("checkpoint/testdata/hf_" + version +
                                                           "/training_args.bin"));
    EXPECT_THAT(UnpickleTorchSave(bytes).status(),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("TrainingArguments")));
    ASSERT_OK_AND_ASSIGN(c10::IValue v, UnpickleTorchSave(bytes, {.hf_training_arguments = true}));
    const auto d = v.toGenericDict();
    EXPECT_EQ(d.at("lr_scheduler_type").toStringRef(), "cosine") << version;
    EXPECT_EQ(d.at("optim").toStringRef(), "adafactor") << version;
    EXPECT_EQ(d.at("save_strategy").toStringRef(), "epoch") << version;
    EXPECT_EQ(d.at("fsdp").toListRef()[1].toStringRef(), "auto_wrap") << version;
    EXPECT_EQ(d.at("distributed_state").toGenericDict().at("device").toStringRef(), "cpu");
  }
}

}  // namespace
}  // namespace loom::checkpoint
