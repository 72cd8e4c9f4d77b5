#include "data/data_loader.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <c10/util/Exception.h>

#include <atomic>
#include <chrono>
#include <limits>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::data {
namespace {

using base::testing::StatusIs;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// Example i is {"x": i, "y": [i, -i]}; Get counts its calls, may sleep a little (so workers
// finish out of order), may fail or throw at one index.
class CountingDataset : public Dataset {
 public:
  explicit CountingDataset(int64_t n) : n_(n) {}
  int64_t Size() const override { return n_; }
  absl::StatusOr<Example> Get(int64_t i) const override {
    gets_.fetch_add(1);
    if (jitter_) std::this_thread::sleep_for(std::chrono::microseconds((i * 7919) % 300));
    if (i == fail_at_) return absl::DataLossError(absl::StrCat("record ", i, " is corrupt"));
    if (i == throw_at_) TORCH_CHECK(false, "torch failure at ", i);
    return Example{{"x", at::scalar_tensor(i, at::kLong)}, {"y", at::tensor({i, -i}, at::kLong)}};
  }
  int64_t gets() const { return gets_.load(); }
  int64_t n_;
  bool jitter_ = false;
  int64_t fail_at_ = -1;
  int64_t throw_at_ = -1;

 private:
  mutable std::atomic<int64_t> gets_{0};
};

// Fails when a batch contains x == fail_x.
class FailingCollator : public Collator {
 public:
  explicit FailingCollator(int64_t fail_x) : fail_x_(fail_x) {}
  absl::StatusOr<Batch> Collate(const std::vector<Example>& examples) const override {
    for (const Example& e : examples) {
      if (e.at("x").item<int64_t>() == fail_x_) return absl::InvalidArgumentError("bad example");
    }
    return DefaultCollator().Collate(examples);
  }

 private:
  int64_t fail_x_;
};

// A wrapper sampler, as a distributed shard will be: every `world`-th index of the inner order.
class StrideSampler : public Sampler {
 public:
  StrideSampler(std::unique_ptr<Sampler> inner, int64_t rank, int64_t world)
      : inner_(std::move(inner)), rank_(rank), world_(world) {}
  int64_t Size() const override { return (inner_->Size() - rank_ + world_ - 1) / world_; }
  std::vector<int64_t> Indices(int64_t epoch) const override {
    std::vector<int64_t> all = inner_->Indices(epoch), mine;
    for (size_t i = rank_; i < all.size(); i += world_) mine.push_back(all[i]);
    return mine;
  }

 private:
  std::unique_ptr<Sampler> inner_;
  int64_t rank_, world_;
};

std::unique_ptr<DataLoader> MakeLoader(std::shared_ptr<const Dataset> ds,
                                       std::unique_ptr<Sampler> sampler, DataLoaderOptions o,
                                       std::shared_ptr<const Collator> collator = nullptr) {
  if (collator == nullptr) collator = std::make_shared<DefaultCollator>();
  auto loader = DataLoader::Create(o, std::move(ds), std::move(sampler), std::move(collator));
  EXPECT_TRUE(loader.ok()) << loader.status();
  return std::move(loader).value();
}

// All batches of an epoch (the test fails on an error).
std::vector<Batch> Drain(BatchIterator& it) {
  std::vector<Batch> out;
  while (true) {
    absl::StatusOr<std::optional<Batch>> b = it.Next();
    EXPECT_TRUE(b.ok()) << b.status();
    if (!b.ok() || !b->has_value()) return out;
    out.push_back(std::move(**b));
  }
}

std::vector<std::vector<int64_t>> Xs(const std::vector<Batch>& batches) {
  std::vector<std::vector<int64_t>> out;
  for (const Batch& b : batches) {
    const at::Tensor x = b.at("x").contiguous();
    out.emplace_back(x.data_ptr<int64_t>(), x.data_ptr<int64_t>() + x.numel());
  }
  return out;
}

std::vector<std::vector<int64_t>> EpochXs(DataLoader& loader, int64_t epoch, int64_t skip = 0) {
  auto it = loader.Epoch(epoch, skip);
  EXPECT_TRUE(it.ok()) << it.status();
  if (!it.ok()) return {};
  return Xs(Drain(**it));
}

TEST(DataLoaderTest, BatchCountsWithAndWithoutDropLast) {
  auto ds = std::make_shared<CountingDataset>(10);
  auto keep = MakeLoader(ds, std::make_unique<SequentialSampler>(10),
                         DataLoaderOptions().set_batch_size(4));
  EXPECT_EQ(keep->NumBatches(), 3);
  EXPECT_EQ(keep->NumExamples(), 10);
  EXPECT_THAT(EpochXs(*keep, 0),
              ElementsAre(ElementsAre(0, 1, 2, 3), ElementsAre(4, 5, 6, 7), ElementsAre(8, 9)));
  auto drop = MakeLoader(ds, std::make_unique<SequentialSampler>(10),
                         DataLoaderOptions().set_batch_size(4).set_drop_last(true));
  EXPECT_EQ(drop->NumBatches(), 2);
  EXPECT_THAT(EpochXs(*drop, 0), ElementsAre(ElementsAre(0, 1, 2, 3), ElementsAre(4, 5, 6, 7)));
  auto even = MakeLoader(ds, std::make_unique<SequentialSampler>(8),
                         DataLoaderOptions().set_batch_size(4).set_drop_last(true));
  EXPECT_EQ(even->NumBatches(), 2);
  auto empty = MakeLoader(ds, std::make_unique<SequentialSampler>(0), DataLoaderOptions());
  EXPECT_EQ(empty->NumBatches(), 0);
  EXPECT_THAT(EpochXs(*empty, 0), IsEmpty());
}

TEST(DataLoaderTest, BatchesAreConsecutiveChunksOfTheSamplersOrder) {
  auto ds = std::make_shared<CountingDataset>(10);
  auto loader = MakeLoader(ds, std::make_unique<RandomSampler>(10, 42),
                           DataLoaderOptions().set_batch_size(3));
  const std::vector<int64_t> order = RandomSampler(10, 42).Indices(1);
  std::vector<int64_t> flat;
  for (const auto& b : EpochXs(*loader, 1)) flat.insert(flat.end(), b.begin(), b.end());
  EXPECT_EQ(flat, order);
}

// Python torch 1.13 (Debian's python3-torch), for the expectations below:
//   torch.manual_seed(5)
//   dl = DataLoader(list(range(10)), batch_size=3, shuffle=True)
//   [b.tolist() for b in dl] twice -> [[8,3,0],[5,9,1],[6,2,4],[7]], [[5,8,9],[7,2,0],[4,1,3],[6]]
//   then torch.empty((), dtype=torch.int64).random_() -> 9009596224835060452
// Each pass draws the iterator's base seed, then the generator-less RandomSampler's seed.
TEST(DataLoaderTest, EpochsDrawFromTheGlobalGeneratorAsTorchsDataLoaderDoes) {
  auto ds = std::make_shared<CountingDataset>(10);
  at::manual_seed(5);
  auto loader = MakeLoader(
      ds, RandomSampler::SharedGenerator(10, at::detail::getDefaultCPUGenerator()),
      DataLoaderOptions().set_batch_size(3));
  EXPECT_THAT(EpochXs(*loader, 0), ElementsAre(ElementsAre(8, 3, 0), ElementsAre(5, 9, 1),
                                               ElementsAre(6, 2, 4), ElementsAre(7)));
  EXPECT_THAT(EpochXs(*loader, 1), ElementsAre(ElementsAre(5, 8, 9), ElementsAre(7, 2, 0),
                                               ElementsAre(4, 1, 3), ElementsAre(6)));
  EXPECT_EQ(DrawIteratorBaseSeed(at::detail::getDefaultCPUGenerator()), 9009596224835060452);
}

// The number of int64 draws Epoch() makes from the global generator over `epochs` epochs.
int64_t BaseSeedDraws(DataLoaderOptions options, int epochs) {
  auto ds = std::make_shared<CountingDataset>(6);
  auto loader = MakeLoader(ds, std::make_unique<SequentialSampler>(6), options);
  at::manual_seed(11);
  for (int e = 0; e < epochs; ++e) EpochXs(*loader, e);
  const int64_t next = DrawIteratorBaseSeed(at::detail::getDefaultCPUGenerator());
  at::manual_seed(11);
  for (int64_t draws = 0; draws <= epochs + 1; ++draws) {
    if (DrawIteratorBaseSeed(at::detail::getDefaultCPUGenerator()) == next) return draws;
  }
  return -1;
}

TEST(DataLoaderTest, PersistentWorkersDrawTheBaseSeedOnce) {
  EXPECT_EQ(BaseSeedDraws(DataLoaderOptions().set_batch_size(4), 3), 3);
  EXPECT_EQ(BaseSeedDraws(DataLoaderOptions().set_batch_size(4).set_num_workers(2), 3), 3);
  EXPECT_EQ(BaseSeedDraws(
                DataLoaderOptions().set_batch_size(4).set_num_workers(2).set_persistent_workers(true),
                3),
            1);
}

TEST(DataLoaderTest, WorkersAndPrefetchGiveIdenticalBatches) {
  auto ds = std::make_shared<CountingDataset>(97);
  ds->jitter_ = true;
  auto reference =
      MakeLoader(ds, std::make_unique<RandomSampler>(97, 3), DataLoaderOptions().set_batch_size(5));
  auto ref_it = reference->Epoch(2);
  ASSERT_OK(ref_it.status());
  const std::vector<Batch> expected = Drain(**ref_it);
  ASSERT_EQ(expected.size(), 20u);
  for (int workers : {0, 1, 3}) {
    for (int prefetch : {1, 2, 5}) {
      auto loader = MakeLoader(
          ds, std::make_unique<RandomSampler>(97, 3),
          DataLoaderOptions().set_batch_size(5).set_num_workers(workers).set_prefetch_factor(
              prefetch));
      ASSERT_OK_AND_ASSIGN(auto it, loader->Epoch(2));
      const std::vector<Batch> got = Drain(*it);
      ASSERT_EQ(got.size(), expected.size()) << workers << " workers, prefetch " << prefetch;
      for (size_t b = 0; b < got.size(); ++b) {
        ASSERT_EQ(got[b].size(), 2u);
        EXPECT_TRUE(got[b].at("x").equal(expected[b].at("x"))) << "batch " << b;
        EXPECT_TRUE(got[b].at("y").equal(expected[b].at("y"))) << "batch " << b;
      }
      ASSERT_OK_AND_ASSIGN(std::optional<Batch> end, it->Next());
      EXPECT_FALSE(end.has_value());
    }
  }
}

TEST(DataLoaderTest, SkipBatchesNeitherFetchesNorCollatesThem) {
  for (int workers : {0, 2}) {
    auto ds = std::make_shared<CountingDataset>(10);
    auto loader = MakeLoader(ds, std::make_unique<RandomSampler>(10, 42),
                             DataLoaderOptions().set_batch_size(3).set_num_workers(workers));
    const auto full = EpochXs(*loader, 4);
    ASSERT_EQ(full.size(), 4u);
    const int64_t gets_before = ds->gets();
    EXPECT_THAT(EpochXs(*loader, 4, 2), ElementsAre(full[2], full[3]));
    EXPECT_EQ(ds->gets() - gets_before, 4) << "only batches 2 and 3 (3 + 1 examples)";
    EXPECT_THAT(EpochXs(*loader, 4, 4), IsEmpty());
    EXPECT_THAT(EpochXs(*loader, 4, 100), IsEmpty());
    EXPECT_THAT(loader->Epoch(4, -1),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("skip_batches")));
  }
}

TEST(DataLoaderTest, AGetErrorComesOutAtItsBatchAfterTheEarlierOnes) {
  for (int workers : {0, 1, 3}) {
    auto ds = std::make_shared<CountingDataset>(30);
    ds->fail_at_ = 13;
    ds->jitter_ = true;
    auto loader = MakeLoader(ds, std::make_unique<SequentialSampler>(30),
                             DataLoaderOptions().set_batch_size(4).set_num_workers(workers));
    ASSERT_OK_AND_ASSIGN(auto it, loader->Epoch(5));
    for (int b = 0; b < 3; ++b) {
      ASSERT_OK_AND_ASSIGN(std::optional<Batch> batch, it->Next());
      ASSERT_TRUE(batch.has_value());
      EXPECT_EQ(batch->at("x")[0].item<int64_t>(), 4 * b);
    }
    const auto expected_error =
        StatusIs(absl::StatusCode::kDataLoss,
                 AllOf(HasSubstr("epoch 5, batch 3"), HasSubstr("dataset index 13"),
                       HasSubstr("record 13 is corrupt")));
    EXPECT_THAT(it->Next(), expected_error) << workers << " workers";
    EXPECT_THAT(it->Next(), expected_error) << "the error is sticky";
  }
}

TEST(DataLoaderTest, CollateErrorsAndExceptionsBecomeStatuses) {
  for (int workers : {0, 2}) {
    auto ds = std::make_shared<CountingDataset>(12);
    auto loader = MakeLoader(ds, std::make_unique<SequentialSampler>(12),
                             DataLoaderOptions().set_batch_size(4).set_num_workers(workers),
                             std::make_shared<FailingCollator>(6));
    ASSERT_OK_AND_ASSIGN(auto it, loader->Epoch(0));
    ASSERT_OK(it->Next().status());
    EXPECT_THAT(it->Next(), StatusIs(absl::StatusCode::kInvalidArgument,
                                     AllOf(HasSubstr("batch 1"), HasSubstr("collating"),
                                           HasSubstr("bad example"))));

    auto throwing = std::make_shared<CountingDataset>(12);
    throwing->throw_at_ = 9;
    auto loader2 = MakeLoader(throwing, std::make_unique<SequentialSampler>(12),
                              DataLoaderOptions().set_batch_size(4).set_num_workers(workers));
    ASSERT_OK_AND_ASSIGN(auto it2, loader2->Epoch(0, /*skip_batches=*/1));
    ASSERT_OK(it2->Next().status());  // batch 1: indices 4..7
    EXPECT_THAT(it2->Next(),
                StatusIs(absl::StatusCode::kInternal,
                         AllOf(HasSubstr("batch 2"), HasSubstr("torch failure at 9"))));
  }
}

TEST(DataLoaderTest, PrefetchIsBoundedByWorkersTimesPrefetchFactor) {
  auto ds = std::make_shared<CountingDataset>(100);
  auto loader =
      MakeLoader(ds, std::make_unique<SequentialSampler>(100),
                 DataLoaderOptions().set_batch_size(2).set_num_workers(2).set_prefetch_factor(3));
  ASSERT_OK_AND_ASSIGN(auto it, loader->Epoch(0));
  const auto wait_for = [&](int64_t gets) {
    for (int i = 0; i < 5000 && ds->gets() < gets; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(30));  // would anyone fetch more?
  };
  wait_for(12);
  EXPECT_EQ(ds->gets(), 12) << "2 workers * 3 batches of 2 examples ahead";
  ASSERT_OK(it->Next().status());
  wait_for(14);
  EXPECT_EQ(ds->gets(), 14) << "one batch consumed, one more prepared";

  auto inline_loader = MakeLoader(ds, std::make_unique<SequentialSampler>(100),
                                  DataLoaderOptions().set_batch_size(2));
  const int64_t before = ds->gets();
  ASSERT_OK_AND_ASSIGN(auto it0, inline_loader->Epoch(0));
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(ds->gets(), before) << "num_workers=0 fetches nothing ahead";
}

TEST(DataLoaderTest, DestroyingAnIteratorMidEpochStopsItsWorkers) {
  auto ds = std::make_shared<CountingDataset>(1000);
  ds->jitter_ = true;
  auto loader =
      MakeLoader(ds, std::make_unique<SequentialSampler>(1000),
                 DataLoaderOptions().set_batch_size(1).set_num_workers(3).set_prefetch_factor(2));
  const long owners = ds.use_count();  // this test and the loader
  {
    ASSERT_OK_AND_ASSIGN(auto it, loader->Epoch(0));
    ASSERT_OK(it->Next().status());
    ASSERT_OK(it->Next().status());
    EXPECT_GT(ds.use_count(), owners);
  }  // destroyed with workers busy or waiting for room
  EXPECT_EQ(ds.use_count(), owners) << "the iterator's threads and source are gone";
  const int64_t gets = ds->gets();
  EXPECT_LE(gets, 2 + 6 + 3) << "consumed + window + in flight";
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(ds->gets(), gets) << "no thread fetches after destruction";

  // Destroyed right away, before any Next().
  { ASSERT_OK(loader->Epoch(1).status()); }
  EXPECT_EQ(ds.use_count(), owners);
}

TEST(DataLoaderTest, AnIteratorMayOutliveItsLoader) {
  auto ds = std::make_shared<CountingDataset>(9);
  auto loader = MakeLoader(ds, std::make_unique<SequentialSampler>(9),
                           DataLoaderOptions().set_batch_size(4).set_num_workers(2));
  ASSERT_OK_AND_ASSIGN(auto it, loader->Epoch(0));
  loader.reset();
  EXPECT_THAT(Xs(Drain(*it)),
              ElementsAre(ElementsAre(0, 1, 2, 3), ElementsAre(4, 5, 6, 7), ElementsAre(8)));
}

TEST(DataLoaderTest, SamplersCompose) {
  auto ds = std::make_shared<CountingDataset>(10);
  auto loader =
      MakeLoader(ds, std::make_unique<StrideSampler>(std::make_unique<RandomSampler>(10, 42), 1, 2),
                 DataLoaderOptions().set_batch_size(2));
  const std::vector<int64_t> all = RandomSampler(10, 42).Indices(0);
  EXPECT_EQ(loader->NumBatches(), 3);
  EXPECT_THAT(EpochXs(*loader, 0), ElementsAre(ElementsAre(all[1], all[3]),
                                               ElementsAre(all[5], all[7]), ElementsAre(all[9])));
}

TEST(DataLoaderTest, SamplerIndicesOutsideTheDatasetAreAnError) {
  auto ds = std::make_shared<CountingDataset>(5);
  auto loader = MakeLoader(ds, std::make_unique<SequentialSampler>(7), DataLoaderOptions());
  EXPECT_THAT(loader->Epoch(0), StatusIs(absl::StatusCode::kOutOfRange,
                                         AllOf(HasSubstr("index 5"), HasSubstr("size 5"))));
}

TEST(DataLoaderTest, CreateRejectsBadOptions) {
  auto ds = std::make_shared<CountingDataset>(5);
  auto collator = std::make_shared<DefaultCollator>();
  const auto create = [&](DataLoaderOptions o) {
    return DataLoader::Create(o, ds, std::make_unique<SequentialSampler>(5), collator).status();
  };
  EXPECT_THAT(create(DataLoaderOptions().set_batch_size(0)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("batch_size")));
  EXPECT_THAT(create(DataLoaderOptions().set_num_workers(-1)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--dataloader_num_workers")));
  EXPECT_THAT(
      create(DataLoaderOptions().set_num_workers(2).set_prefetch_factor(0)),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--dataloader_prefetch_factor")));
  EXPECT_OK(create(DataLoaderOptions().set_prefetch_factor(0)));  // unused without workers
  EXPECT_THAT(DataLoader::Create(DataLoaderOptions(), ds, nullptr, collator),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("non-null")));
  EXPECT_THAT(DataLoader::Create(DataLoaderOptions(), std::shared_ptr<IterableDataset>(), collator),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("non-null")));
}

// Epoch e yields x = 100 * e + i for i < n; records SetEpoch calls; may fail at one position.
class EpochStream : public IterableDataset {
 public:
  explicit EpochStream(int64_t n) : n_(n) {}
  void SetEpoch(int64_t epoch) override { epochs_.push_back(epoch); }
  absl::StatusOr<std::unique_ptr<ExampleIterator>> Iterate() override {
    if (refuse_) return absl::UnavailableError("stream offline");
    return std::make_unique<It>(epochs_.empty() ? 0 : epochs_.back(), n_, fail_at_);
  }
  std::vector<int64_t> epochs_;
  int64_t fail_at_ = -1;
  bool refuse_ = false;

 private:
  class It : public ExampleIterator {
   public:
    It(int64_t epoch, int64_t n, int64_t fail_at) : epoch_(epoch), n_(n), fail_at_(fail_at) {}
    absl::StatusOr<std::optional<Example>> Next() override {
      if (i_ == fail_at_) return absl::AbortedError("stream broke");
      if (i_ >= n_) return std::nullopt;
      const int64_t x = 100 * epoch_ + i_++;
      return Example{{"x", at::scalar_tensor(x, at::kLong)}};
    }

   private:
    int64_t epoch_, n_, fail_at_, i_ = 0;
  };
  int64_t n_;
};

std::unique_ptr<DataLoader> MakeIterableLoader(std::shared_ptr<IterableDataset> ds,
                                               DataLoaderOptions o) {
  auto loader = DataLoader::Create(o, std::move(ds), std::make_shared<DefaultCollator>());
  EXPECT_TRUE(loader.ok()) << loader.status();
  return std::move(loader).value();
}

TEST(DataLoaderIterableTest, SetsTheEpochAndBatchesTheStream) {
  for (int workers : {0, 1, 3}) {
    auto ds = std::make_shared<EpochStream>(10);
    auto loader = MakeIterableLoader(
        ds, DataLoaderOptions().set_batch_size(4).set_num_workers(workers).set_prefetch_factor(1));
    EXPECT_EQ(loader->NumBatches(), std::nullopt);
    EXPECT_EQ(loader->NumExamples(), std::nullopt);
    EXPECT_THAT(EpochXs(*loader, 0),
                ElementsAre(ElementsAre(0, 1, 2, 3), ElementsAre(4, 5, 6, 7), ElementsAre(8, 9)));
    EXPECT_THAT(EpochXs(*loader, 2),
                ElementsAre(ElementsAre(200, 201, 202, 203), ElementsAre(204, 205, 206, 207),
                            ElementsAre(208, 209)));
    EXPECT_THAT(ds->epochs_, ElementsAre(0, 2));
  }
}

TEST(DataLoaderIterableTest, DropLastAndSkipBatches) {
  auto ds = std::make_shared<EpochStream>(10);
  auto loader = MakeIterableLoader(ds, DataLoaderOptions().set_batch_size(4).set_drop_last(true));
  EXPECT_THAT(EpochXs(*loader, 1),
              ElementsAre(ElementsAre(100, 101, 102, 103), ElementsAre(104, 105, 106, 107)));
  auto keep = MakeIterableLoader(ds, DataLoaderOptions().set_batch_size(4).set_num_workers(2));
  EXPECT_THAT(EpochXs(*keep, 1, 1),
              ElementsAre(ElementsAre(104, 105, 106, 107), ElementsAre(108, 109)));
  EXPECT_THAT(EpochXs(*keep, 1, 3), IsEmpty());
  EXPECT_THAT(EpochXs(*keep, 1, std::numeric_limits<int64_t>::max()), IsEmpty());
  auto exact = MakeIterableLoader(std::make_shared<EpochStream>(8),
                                  DataLoaderOptions().set_batch_size(4).set_drop_last(true));
  EXPECT_EQ(EpochXs(*exact, 0).size(), 2u);
}

TEST(DataLoaderIterableTest, StreamErrorsNameTheBatchAndExample) {
  for (int workers : {0, 2}) {
    auto ds = std::make_shared<EpochStream>(10);
    ds->fail_at_ = 5;
    auto loader =
        MakeIterableLoader(ds, DataLoaderOptions().set_batch_size(4).set_num_workers(workers));
    ASSERT_OK_AND_ASSIGN(auto it, loader->Epoch(3));
    ASSERT_OK(it->Next().status());
    EXPECT_THAT(it->Next(),
                StatusIs(absl::StatusCode::kAborted,
                         AllOf(HasSubstr("epoch 3, batch 1"), HasSubstr("reading example 5"),
                               HasSubstr("stream broke"))));
  }
  auto offline = std::make_shared<EpochStream>(10);
  offline->refuse_ = true;
  auto loader = MakeIterableLoader(offline, DataLoaderOptions());
  EXPECT_THAT(loader->Epoch(0), StatusIs(absl::StatusCode::kUnavailable,
                                         AllOf(HasSubstr("epoch 0"), HasSubstr("stream offline"))));
}

}  // namespace
}  // namespace loom::data

namespace loom::data {
namespace {

TEST(DataLoaderObserverTest, ReportsEachBatchAndTheLast) {
  for (int workers : {0, 2}) {
    auto ds = std::make_shared<CountingDataset>(10);
    ASSERT_OK_AND_ASSIGN(auto loader,
                         DataLoader::Create(DataLoaderOptions().set_batch_size(4).set_num_workers(
                                                workers),
                                            ds, std::make_unique<SequentialSampler>(10),
                                            std::make_shared<DefaultCollator>()));
    std::vector<std::string> seen;
    loader->SetBatchObserver([&](int64_t epoch, int64_t batch, bool last) {
      seen.push_back(absl::StrCat(epoch, ":", batch, last ? "L" : ""));
    });
    ASSERT_OK_AND_ASSIGN(auto it, loader->Epoch(3, /*skip_batches=*/1));
    while (true) {
      ASSERT_OK_AND_ASSIGN(std::optional<Batch> b, it->Next());
      if (!b) break;
    }
    EXPECT_THAT(seen, ElementsAre("3:1", "3:2L", "3:-1")) << workers << " workers";
  }
}

}  // namespace
}  // namespace loom::data
