// The progress display: status line, ETA, plain periodic lines, live redraws, Ctrl-C summary.
#include "cli/progress.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <thread>

namespace kbv {
namespace progress_test {

// Captures what a Progress writes.
struct Capture {
  char* data = nullptr;
  size_t size = 0;
  FILE* file = open_memstream(&data, &size);
  ~Capture() {
    if (file) std::fclose(file);
    std::free(data);
  }
  std::string text() {
    std::fflush(file);
    return std::string(data, size);
  }
};

TEST(ProgressFormat, Durations) {
  EXPECT_EQ(format_duration(0), "0s");
  EXPECT_EQ(format_duration(44.6), "45s");
  EXPECT_EQ(format_duration(200), "3m20s");
  EXPECT_EQ(format_duration(7500), "2h05m");
  EXPECT_EQ(format_duration(-1), "?");
}

TEST(ProgressFormat, EtaFromThePaceSoFar) {
  EXPECT_FALSE(eta_seconds(0, 10, 5).has_value()) << "nothing finished yet";
  EXPECT_DOUBLE_EQ(*eta_seconds(2, 10, 20), 80);  // 10 s each, 8 left
  EXPECT_DOUBLE_EQ(*eta_seconds(10, 10, 20), 0);
}

TEST(Progress, StatusCountsRunningItemsAndEta) {
  Capture c;
  double now = 100;
  Progress p(4, {c.file, false, std::chrono::milliseconds(0), [&] { return now; }});
  p.started(0, "level 1 problem 19 sample 0");
  EXPECT_EQ(p.status(), "[0/4] 0 correct, 0 failed · now: level 1 problem 19 sample 0 · 0s elapsed");
  now = 110;
  p.finished(0, true, "[1/4] level 1 problem 19 sample 0: correct (10.0 s)");
  p.started(1, "level 1 problem 23 sample 0");
  p.started(2, "level 1 problem 26 sample 0");
  p.started(3, "level 1 problem 47 sample 0");
  EXPECT_EQ(p.status(),
            "[1/4] 1 correct, 0 failed · now: level 1 problem 23 sample 0, level 1 problem 26 sample 0 +1 · 10s "
            "elapsed · ETA 30s");
  now = 130;
  p.finished(1, false, "[2/4] level 1 problem 23 sample 0: wrong_output");
  EXPECT_NE(p.status().find("[2/4] 1 correct, 1 failed"), std::string::npos) << p.status();
  EXPECT_NE(p.status().find("ETA 30s"), std::string::npos) << p.status();  // 15 s each, 2 left
  p.stop();
  EXPECT_EQ(c.text(),
            "[1/4] level 1 problem 19 sample 0: correct (10.0 s)\n"
            "[2/4] level 1 problem 23 sample 0: wrong_output\n")
      << "plain output: the finished lines only, no escape codes";
}

TEST(Progress, PlainPeriodicLines) {
  Capture c;
  std::atomic<double> now{0};
  Progress p(3, {c.file, false, std::chrono::milliseconds(1000), [&] { return now.load(); }});
  p.started(0, "level 1 problem 1 sample 0");
  now = 1.5;  // past one period: the ticker (every 200 ms) prints a status line
  std::string text;
  for (int i = 0; i < 50 && text.find("kbv: progress") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    text = p.status();  // synchronise with the ticker through the mutex
    text = c.text();
  }
  p.stop();
  EXPECT_NE(c.text().find("kbv: progress [0/3] 0 correct, 0 failed · now: level 1 problem 1 sample 0"),
            std::string::npos)
      << c.text();
}

TEST(Progress, LiveLineRedrawsInPlaceAndClearsOnStop) {
  Capture c;
  double now = 0;
  Progress p(2, {c.file, true, std::chrono::milliseconds(0), [&] { return now; }});
  EXPECT_TRUE(p.live());
  p.started(0, "level 1 problem 1 sample 0");
  p.finished(0, true, "[1/2] done");
  p.stop();
  std::string text = c.text();
  EXPECT_EQ(text.rfind("\r\033[K[0/2] 0 correct, 0 failed · now: level 1 problem 1 sample 0", 0), 0u) << text;
  EXPECT_NE(text.find("\r\033[K[1/2] done\n\r\033[K[1/2] 1 correct, 0 failed"), std::string::npos)
      << "the finished line replaces the live line, which is drawn again below it";
  EXPECT_EQ(text.substr(text.size() - 4), "\r\033[K") << "stop() leaves a clean line";
}

TEST(Progress, InterruptSummaryNamesWhatIsAbandoned) {
  Capture c;
  Progress p(3, {c.file, false, std::chrono::milliseconds(0), [] { return 0.0; }});
  p.started(0, "level 1 problem 19 sample 0");
  p.finished(0, false, "x");
  p.started(1, "level 1 problem 19 sample 2");
  EXPECT_EQ(p.interrupt_summary(),
            "Ctrl-C: stopping; 1 of 3 finished and stored (0 correct, 1 failed); abandoned, not stored: level 1 "
            "problem 19 sample 2");
}

}  // namespace progress_test
}  // namespace kbv
