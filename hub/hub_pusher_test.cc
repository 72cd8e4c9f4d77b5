// HubPusher's schedule against real remotes: every_save (the modeling files of each checkpoint,
// HF's commit messages, no checkpoint folders), checkpoint (last-checkpoint/ is the latest
// checkpoint whole, in a second commit "..., checkpoint"), all_checkpoints (each checkpoint
// folder as it is), end (nothing until Push); against a slow HTTP remote, a save during a
// running push is skipped (queued with always_push) without blocking the caller, and the final
// blocking push waits for everything.
#include "hub/hub_pusher.h"

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hub/git.h"
#include "hub/testing_remote.h"

namespace loom::hub {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;

std::string Tmp() { return std::getenv("TEST_TMPDIR"); }
using testing::Random;
using testing::Read;
using testing::Write;

// checkpoint-N as the Trainer writes it.
fs::path Checkpoint(const fs::path& out, int step) {
  const fs::path c = out / ("checkpoint-" + std::to_string(step));
  Write(c / "config.json", "{\"step\": " + std::to_string(step) + "}\n");
  Write(c / "model.safetensors", Random(50000, step));
  Write(c / "optimizer.pt", Random(1000, 100 + step));
  Write(c / "trainer_state.json", "{\"global_step\": " + std::to_string(step) + "}\n");
  Write(c / "training_args.bin", "args");
  return c;
}

std::vector<std::string> Log(const fs::path& clone) {
  absl::StatusOr<std::string> log = Git(clone, std::nullopt).Check({"log", "--format=%s"}, "log");
  std::vector<std::string> out;
  std::stringstream s(log.ok() ? *log : "");
  for (std::string line; std::getline(s, line);) out.push_back(line);
  return out;
}

fs::path Clone(const std::string& url, const std::string& name,
               std::optional<std::string> token = std::nullopt) {
  const fs::path dest = Tmp() + "/" + name;
  EXPECT_OK(Git(Tmp(), token).Check({"clone", "-q", "-b", "main", url, dest.string()}, "clone")
                .status());
  return dest;
}

std::unique_ptr<HubPusher> Pusher(const std::string& out, const std::string& url,
                                  HubStrategy strategy, bool always = false,
                                  std::optional<std::string> token = std::nullopt) {
  HubPusherOptions o;
  o.output_dir = out;
  o.remote_url = url;
  o.strategy = strategy;
  o.always_push = always;
  o.token = token;
  absl::StatusOr<std::unique_ptr<HubPusher>> p = HubPusher::Create(std::move(o));
  EXPECT_OK(p.status());
  return p.ok() ? std::move(*p) : nullptr;
}

TEST(HubPusherTest, EverySave) {
  const std::string url = testing::BareRemote(Tmp() + "/every.git");
  const fs::path out = Tmp() + "/every";
  auto pusher = Pusher(out, url, HubStrategy::kEverySave);
  for (int step : {2, 4}) {
    ASSERT_OK(pusher->OnCheckpoint(Checkpoint(out, step), "Training in progress, step " +
                                                              std::to_string(step)));
    ASSERT_OK(pusher->Wait());
  }
  Write(out / "README.md", "model card\n");
  // A checkpoint folder being written (checkpoint/folder's staging name) is never pushed.
  Write(out / ".loom-staging-checkpoint-6.77.0123456789abcdef/optimizer.pt", "half written");
  ASSERT_OK(pusher->Push("End of training", /*blocking=*/true));
  EXPECT_EQ(pusher->pushes_started(), 3);
  const fs::path clone = Clone(url, "every-clone");
  EXPECT_THAT(Log(clone), ElementsAre("End of training", "Training in progress, step 4",
                                      "Training in progress, step 2"));
  EXPECT_TRUE(Read(clone / "model.safetensors") == Read(out / "checkpoint-4/model.safetensors"));
  EXPECT_EQ(Read(clone / "config.json"), "{\"step\": 4}\n");
  EXPECT_EQ(Read(clone / "training_args.bin"), "args");
  EXPECT_FALSE(fs::exists(clone / "optimizer.pt"));
  EXPECT_FALSE(fs::exists(clone / "checkpoint-4"));
  EXPECT_FALSE(fs::exists(clone / "last-checkpoint"));
  EXPECT_FALSE(fs::exists(clone / ".loom-staging-checkpoint-6.77.0123456789abcdef"));
}

TEST(HubPusherTest, CheckpointAndAllCheckpoints) {
  for (HubStrategy strategy : {HubStrategy::kCheckpoint, HubStrategy::kAllCheckpoints}) {
    const bool all = strategy == HubStrategy::kAllCheckpoints;
    const std::string name = all ? "all" : "last";
    const std::string url = testing::BareRemote(Tmp() + "/" + name + ".git");
    const fs::path out = Tmp() + "/" + name;
    auto pusher = Pusher(out, url, strategy);
    for (int step : {3, 6}) {
      ASSERT_OK(pusher->OnCheckpoint(Checkpoint(out, step),
                                     "Training in progress, epoch " + std::to_string(step / 3)));
      ASSERT_OK(pusher->Wait());
    }
    const fs::path clone = Clone(url, name + "-clone");
    EXPECT_THAT(Log(clone),
                ElementsAre("Training in progress, epoch 2, checkpoint",
                            "Training in progress, epoch 2",
                            "Training in progress, epoch 1, checkpoint",
                            "Training in progress, epoch 1"));
    for (const char* f : {"config.json", "model.safetensors", "optimizer.pt",
                          "trainer_state.json"}) {
      if (all) {
        EXPECT_TRUE(Read(clone / "checkpoint-3" / f) == Read(out / "checkpoint-3" / f)) << f;
        EXPECT_TRUE(Read(clone / "checkpoint-6" / f) == Read(out / "checkpoint-6" / f)) << f;
      } else {
        EXPECT_TRUE(Read(clone / "last-checkpoint" / f) == Read(out / "checkpoint-6" / f)) << f;
      }
    }
    EXPECT_EQ(fs::exists(clone / "last-checkpoint"), !all);
    EXPECT_EQ(fs::exists(clone / "checkpoint-3"), all);
    // HF's push_to_hub leaves checkpoint folders out, also with all_checkpoints.
    Write(out / "checkpoint-9/model.safetensors", "not pushed at the end");
    Write(out / "README.md", "card\n");
    ASSERT_OK(pusher->Push("End of training", /*blocking=*/true));
    const fs::path after = Clone(url, name + "-clone-end");
    EXPECT_FALSE(fs::exists(after / "checkpoint-9"));
    EXPECT_TRUE(fs::exists(after / "README.md"));
  }
}

TEST(HubPusherTest, EndPushesOnlyAtTheEnd) {
  const std::string url = testing::BareRemote(Tmp() + "/end.git");
  const fs::path out = Tmp() + "/end";
  auto pusher = Pusher(out, url, HubStrategy::kEnd);
  ASSERT_OK(pusher->OnCheckpoint(Checkpoint(out, 1), "Training in progress, step 1"));
  EXPECT_EQ(pusher->pushes_started(), 0);
  Write(out / "model.safetensors", Random(1000, 9));
  ASSERT_OK(pusher->Push("End of training", true));
  EXPECT_THAT(Log(Clone(url, "end-clone")), ElementsAre("End of training"));
}

TEST(HubPusherTest, SlowRemoteSkipsOrQueuesWithoutBlocking) {
  const std::string token = "hf_SlowRemoteToken";
  testing::HttpRemote server(Tmp() + "/slow-root", token, /*delay_s=*/1.5);
  ASSERT_TRUE(server.up());
  for (bool always : {false, true}) {
    const std::string repo = always ? "u/always" : "u/skip";
    const fs::path out = Tmp() + (always ? "/always" : "/skip");
    auto pusher = Pusher(out, server.Url(repo), HubStrategy::kEverySave, always, token);
    const auto timed = [&](int step) {
      const fs::path c = Checkpoint(out, step);
      const auto start = std::chrono::steady_clock::now();
      EXPECT_OK(pusher->OnCheckpoint(c, "Training in progress, step " + std::to_string(step)));
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    };
    EXPECT_LT(timed(1), 0.5) << "the save waited for its push";
    // The first push has committed and waits on the slow remote (1.5 s per push request).
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
    EXPECT_LT(timed(2), 0.5) << "the save waited for the running push";
    EXPECT_TRUE(pusher->push_in_progress());
    EXPECT_EQ(pusher->pushes_skipped(), always ? 0 : 1);
    // The Trainer's final save_model, after the running (and queued) pushes finished, as
    // Trainer::PushToHub waits: a queued push moves its own checkpoint's files in.
    EXPECT_OK(pusher->Wait());
    Write(out / "model.safetensors", Random(2000, 77));
    ASSERT_OK(pusher->Push("End of training", /*blocking=*/true));
    EXPECT_FALSE(pusher->push_in_progress());
    const fs::path clone = Clone(server.Url(repo), always ? "always-clone" : "skip-clone", token);
    const std::vector<std::string> log = Log(clone);
    if (!always) {
      // Step 2's save was skipped; the final push took the final model.
      EXPECT_THAT(log, ElementsAre("End of training", "Training in progress, step 1"));
      EXPECT_EQ(Read(clone / "config.json"), "{\"step\": 1}\n");
    } else {
      // Queued, step 2's push ran after the first, with step 2's own files.
      EXPECT_THAT(log, ElementsAre("End of training", "Training in progress, step 2",
                                   "Training in progress, step 1"));
      EXPECT_EQ(Read(clone / "config.json"), "{\"step\": 2}\n");
      EXPECT_EQ(Git(clone.string(), std::nullopt)
                    .Run({"show", "HEAD~1:config.json"})
                    ->output,
                "{\"step\": 2}\n");
      EXPECT_EQ(Git(clone.string(), std::nullopt)
                    .Run({"show", "HEAD~2:config.json"})
                    ->output,
                "{\"step\": 1}\n");
    }
    EXPECT_TRUE(Read(clone / "model.safetensors") == Random(2000, 77)) << "the final model";
  }
}

}  // namespace
}  // namespace loom::hub
