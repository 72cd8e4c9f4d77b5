// TorchSaveWriter: files written piece by piece read back through LibTorch's reader
// (LoadPickle), LazyTorchSave, and Python's own torch.load and zipfile (CRCs checked) — with
// plain zip fields and with zip64 fields forced on every record.
#include "checkpoint/torch_save_writer.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "base/status_matchers.h"
#include "checkpoint/lazy_torch_save.h"
#include "checkpoint/torch_pickle.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::checkpoint {
namespace {

using ::loom::base::testing::StatusIs;
using ::testing::HasSubstr;

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
}

c10::impl::GenericDict StrDict() {
  return c10::impl::GenericDict(c10::StringType::get(), c10::AnyType::get());
}

// What the file should hold: "fp32" (written in three pieces), "bf16" (one piece, in a list
// beside an int), "step" (an ordinary tensor written by Create).
struct Expected {
  at::Tensor fp32 = at::arange(1000, at::kFloat) * 0.5;
  at::Tensor bf16 = at::linspace(-2, 2, 7).to(at::kBFloat16);
  at::Tensor step = at::full({}, 3.0);
};

absl::Status WriteFile(const std::string& path, const Expected& e,
                       const TorchSaveWriterOptions& options) {
  auto out = TorchSaveWriter::Create(path, options);
  if (!out.ok()) return out.status();
  absl::StatusOr<at::Tensor> fp32 = (*out)->Reserve(at::kFloat, 1000);
  if (!fp32.ok()) return fp32.status();
  absl::StatusOr<at::Tensor> bf16 = (*out)->Reserve(at::kBFloat16, 7);
  if (!bf16.ok()) return bf16.status();
  // Interleaved: a piece of fp32, then bf16, then the rest of fp32 (a strided view).
  if (absl::Status s = (*out)->Write(*fp32, 0, e.fp32.slice(0, 0, 300)); !s.ok()) return s;
  if (absl::Status s = (*out)->Write(*bf16, 0, e.bf16); !s.ok()) return s;
  if (absl::Status s = (*out)->Write(*fp32, 300, e.fp32.slice(0, 300, 999)); !s.ok()) return s;
  const at::Tensor last = e.fp32.slice(0, 999, 1000).expand({1});
  if (absl::Status s = (*out)->Write(*fp32, 999, last); !s.ok()) return s;
  // The value, known only now (as a ZeRO file's, whose keys come with its pieces).
  c10::impl::GenericDict d = StrDict();
  c10::impl::GenericList list(c10::AnyType::get());
  list.push_back(*bf16);
  list.push_back(int64_t{7});
  d.insert("step", e.step);
  d.insert("fp32", *fp32);
  d.insert("list", list);
  return (*out)->Commit(d);
}

void ExpectReadsBack(const std::string& path, const Expected& e) {
  ASSERT_OK_AND_ASSIGN(c10::IValue v, LoadPickle(path));
  const c10::impl::GenericDict d = v.toGenericDict();
  EXPECT_TRUE(at::equal(d.at("fp32").toTensor(), e.fp32));
  EXPECT_TRUE(at::equal(d.at("list").toListRef()[0].toTensor(), e.bf16));
  EXPECT_EQ(d.at("list").toListRef()[1].toInt(), 7);
  EXPECT_TRUE(at::equal(d.at("step").toTensor(), e.step));

  ASSERT_OK_AND_ASSIGN(auto lazy, LazyTorchSave::Open(path));
  const at::Tensor placeholder = lazy->value().toGenericDict().at("fp32").toTensor();
  at::Tensor part = at::empty({5}, at::kFloat);
  ASSERT_OK(lazy->ReadElements(placeholder, 995, 5, part.data_ptr<float>()));
  EXPECT_TRUE(at::equal(part, e.fp32.slice(0, 995, 1000)));

  // Python: zipfile's CRC check, then torch.load (weights_only where the torch has it).
  const std::string script =
      "import sys, zipfile, torch\n"
      "assert zipfile.ZipFile(sys.argv[1]).testzip() is None\n"
      "try:\n"
      "    d = torch.load(sys.argv[1], weights_only=True)\n"
      "except TypeError:\n"
      "    d = torch.load(sys.argv[1])\n"
      "assert torch.equal(d['fp32'], torch.arange(1000, dtype=torch.float32) * 0.5)\n"
      "assert torch.equal(d['list'][0], torch.linspace(-2, 2, 7).to(torch.bfloat16))\n"
      "assert d['list'][1] == 7 and float(d['step']) == 3.0\n"
      "print('ok')\n";
  const std::string script_path = path + ".py";
  FILE* f = std::fopen(script_path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs(script.c_str(), f);
  std::fclose(f);
  const std::string cmd = "/usr/bin/python3 " + script_path + " " + path + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string output;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof(buf), p)) output.append(buf, n);
  EXPECT_EQ(pclose(p), 0) << output;
  EXPECT_EQ(output, "ok\n");
}

TEST(TorchSaveWriterTest, PiecesReadBackEverywhere) {
  const Expected e;
  const std::string path = TempPath("plain.pt");
  ASSERT_OK(WriteFile(path, e, {}));
  ExpectReadsBack(path, e);
}

TEST(TorchSaveWriterTest, Zip64FieldsReadBackEverywhere) {
  const Expected e;
  const std::string path = TempPath("zip64.pt");
  ASSERT_OK(WriteFile(path, e, {.zip64_threshold = 0}));
  ExpectReadsBack(path, e);
}

TEST(TorchSaveWriterTest, MisplacedPiecesAreRefused) {
  const std::string path = TempPath("bad.pt");
  ASSERT_OK_AND_ASSIGN(auto out, TorchSaveWriter::Create(path));
  ASSERT_OK_AND_ASSIGN(at::Tensor p, out->Reserve(at::kFloat, 10));
  ASSERT_OK_AND_ASSIGN(at::Tensor unused, out->Reserve(at::kFloat, 2));
  c10::impl::GenericDict d = StrDict();
  d.insert("p", p);
  EXPECT_THAT(out->Write(p, 2, at::zeros({3})),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("do not continue")));
  EXPECT_THAT(out->Write(p, 0, at::zeros({11})),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("do not continue")));
  EXPECT_THAT(out->Write(p, 0, at::zeros({3}, at::kDouble)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("takes CPU Float")));
  EXPECT_THAT(out->Write(at::zeros({3}), 0, at::zeros({3})),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not a placeholder")));
  ASSERT_OK(out->Write(p, 0, at::zeros({4})));
  EXPECT_THAT(out->Commit(d), StatusIs(absl::StatusCode::kFailedPrecondition,
                                       HasSubstr("placeholder 1 is not in the value saved")));
  d.insert("unused", unused);
  ASSERT_OK(out->WriteZeros(unused, 2));
  EXPECT_THAT(out->Commit(d), StatusIs(absl::StatusCode::kFailedPrecondition,
                                       HasSubstr("archive/data/0 holds 16 of its 40 bytes")));
  out.reset();
  EXPECT_FALSE(std::ifstream(path).good());  // nothing appeared
}

}  // namespace
}  // namespace loom::checkpoint
