#include "logging/progress.h"

#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace loom::logging {
namespace {

class ProgressBarTest : public ::testing::Test {
 protected:
  ProgressOptions Options(int64_t total, std::string description, bool is_tty) {
    ProgressOptions o;
    o.total = total;
    o.description = std::move(description);
    o.out = &out_;
    o.is_tty = is_tty;
    o.clock = [this] { return now_; };
    return o;
  }

  double now_ = 0;
  std::ostringstream out_;
};

TEST_F(ProgressBarTest, TtyRedrawsInPlaceThrottledToTenPerSecond) {
  ProgressBar bar(Options(4, "train", /*is_tty=*/true));
  now_ = 0.5;
  bar.Update();
  now_ = 0.55;  // within 0.1 s of the last draw: skipped
  bar.Update();
  now_ = 1.0;
  bar.Update();
  now_ = 1.02;  // reaches the total: drawn despite the throttle
  bar.Update();
  now_ = 2.0;
  bar.Close();
  EXPECT_EQ(out_.str(),
            "\rtrain:   0%|                    | 0/4 [00:00<?, ?it/s]"
            "\rtrain:  25%|#####               | 1/4 [00:00<00:01, 2.00it/s]"
            "\rtrain:  75%|###############     | 3/4 [00:01<00:00, 3.00it/s]"
            "\rtrain: 100%|####################| 4/4 [00:01<00:00, 3.92it/s]"
            "\rtrain: 100%|####################| 4/4 [00:02<00:00, 2.00it/s]\n");
}

TEST_F(ProgressBarTest, TtyPadsOverALongerPreviousLine) {
  ProgressBar bar(Options(0, "", /*is_tty=*/true));
  now_ = 1.0;
  bar.Update(10);
  now_ = 2.0;
  bar.Update(1);
  bar.Close();
  EXPECT_EQ(out_.str(),
            "\r0it [00:00, ?it/s]"
            "\r10it [00:01, 10.00it/s]"
            "\r11it [00:02, 5.50it/s] "
            "\r11it [00:02, 5.50it/s]\n");
}

TEST_F(ProgressBarTest, TtyWriteClearsTheBarAndRedrawsIt) {
  ProgressBar bar(Options(2, "", /*is_tty=*/true));
  now_ = 1.0;
  bar.Update();
  out_.str("");
  bar.Write("{'loss': 0.5}");
  const std::string line = " 50%|##########          | 1/2 [00:01<00:01, 1.00it/s]";
  EXPECT_EQ(out_.str(), "\r" + std::string(line.size(), ' ') + "\r{'loss': 0.5}\n\r" + line);
}

TEST_F(ProgressBarTest, PlainPrintsEachTenthAndNoDuplicateFinalLine) {
  ProgressBar bar(Options(1000, "", /*is_tty=*/false));
  for (int i = 1; i <= 1000; ++i) {
    now_ = i / 100.0;
    bar.Update();
  }
  bar.Close();
  EXPECT_EQ(out_.str(),
            " 10%|##                  | 100/1000 [00:01<00:09, 100.00it/s]\n"
            " 20%|####                | 200/1000 [00:02<00:08, 100.00it/s]\n"
            " 30%|######              | 300/1000 [00:03<00:07, 100.00it/s]\n"
            " 40%|########            | 400/1000 [00:04<00:06, 100.00it/s]\n"
            " 50%|##########          | 500/1000 [00:05<00:05, 100.00it/s]\n"
            " 60%|############        | 600/1000 [00:06<00:04, 100.00it/s]\n"
            " 70%|##############      | 700/1000 [00:07<00:03, 100.00it/s]\n"
            " 80%|################    | 800/1000 [00:08<00:02, 100.00it/s]\n"
            " 90%|##################  | 900/1000 [00:09<00:01, 100.00it/s]\n"
            "100%|####################| 1000/1000 [00:10<00:00, 100.00it/s]\n");
}

TEST_F(ProgressBarTest, PlainPrintsAfterTheIntervalAndAFinalLine) {
  ProgressBar bar(Options(0, "eval", /*is_tty=*/false));
  for (double t : {10.0, 20.0, 31.0, 40.0, 62.0, 65.0}) {
    now_ = t;
    bar.Update();
  }
  now_ = 70.0;
  bar.Close();
  bar.Close();  // idempotent
  EXPECT_EQ(out_.str(),
            "eval: 3it [00:31, 10.33s/it]\n"
            "eval: 5it [01:02, 12.40s/it]\n"
            "eval: 6it [01:10, 11.67s/it]\n");
}

TEST_F(ProgressBarTest, PlainCloseOfAnUnfinishedLoopPrintsWhereItStopped) {
  ProgressBar bar(Options(100, "train", /*is_tty=*/false));
  now_ = 4.0;
  bar.Update(5);
  bar.Close();
  EXPECT_EQ(out_.str(), "train:   5%|#                   | 5/100 [00:04<01:16, 1.25it/s]\n");
}

TEST_F(ProgressBarTest, DestructorCloses) {
  {
    ProgressBar bar(Options(2, "x", /*is_tty=*/false));
    now_ = 2.0;
    bar.Update();
  }
  EXPECT_EQ(out_.str(), "x:  50%|##########          | 1/2 [00:02<00:02, 2.00s/it]\n");
}

TEST_F(ProgressBarTest, UpdateAfterCloseIsIgnored) {
  ProgressBar bar(Options(2, "x", /*is_tty=*/false));
  bar.Close();
  bar.Update(2);
  EXPECT_EQ(bar.count(), 0);
  EXPECT_EQ(out_.str(), "x:   0%|                    | 0/2 [00:00<?, ?it/s]\n");
}

TEST_F(ProgressBarTest, DisabledPrintsNothingButWriteStillPrints) {
  for (bool tty : {true, false}) {
    out_.str("");
    ProgressOptions options = Options(3, "train", tty);
    options.disable = true;
    ProgressBar bar(options);
    for (int i = 1; i <= 3; ++i) {
      now_ = i * 100.0;
      bar.Update();
    }
    EXPECT_EQ(bar.count(), 3);
    bar.Close();
    EXPECT_EQ(out_.str(), "") << "tty=" << tty;
    bar.Write("msg");
    EXPECT_EQ(out_.str(), "msg\n") << "tty=" << tty;
  }
}

TEST_F(ProgressBarTest, LineFormats) {
  ProgressBar bar(Options(3, "", /*is_tty=*/false));
  bar.Update();
  EXPECT_EQ(bar.Line(2.0), " 33%|######              | 1/3 [00:02<00:04, 2.00s/it]");
  bar.Update(3);  // past the total: bar and percent stay full
  EXPECT_EQ(bar.Line(2.0), "100%|####################| 4/3 [00:02<00:00, 2.00it/s]");

  ProgressBar unknown(Options(-1, "", /*is_tty=*/false));
  unknown.Update();
  EXPECT_EQ(unknown.Line(3725.0), "1it [1:02:05, 3725.00s/it]");
  EXPECT_EQ(unknown.Line(0.0), "1it [00:00, ?it/s]");
}

}  // namespace
}  // namespace loom::logging
