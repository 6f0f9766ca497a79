#include <gtest/gtest.h>

#include "supervisor/run.h"

namespace kbv {
namespace check_gpus_test {

Environment gpus_seen(int n) {
  Environment env;
  env.cuda_available = n > 0;
  env.device_count = n;
  env.device = n > 0 ? "cuda" : "cpu";
  return env;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(CheckGpus, NoListIsAlwaysFine) {
  EXPECT_EQ(check_gpus({}, gpus_seen(0)), "");
  EXPECT_EQ(check_gpus({}, gpus_seen(2)), "");
}

TEST(CheckGpus, IndicesTorchSeesAreFine) {
  EXPECT_EQ(check_gpus({0}, gpus_seen(1)), "");
  EXPECT_EQ(check_gpus({1, 0}, gpus_seen(2)), "");
}

TEST(CheckGpus, AMachineWithoutAGpuSaysSo) {
  std::string e = check_gpus({3}, gpus_seen(0));
  EXPECT_TRUE(has(e, "--gpus 3: torch sees no GPU")) << e;
}

TEST(CheckGpus, TheCpuDeviceWithGpusIsRefused) {
  Environment env = gpus_seen(2);
  env.device = "cpu";  // --device cpu on a GPU machine
  std::string e = check_gpus({0, 1}, env);
  EXPECT_TRUE(has(e, "--gpus 0,1: the device is cpu")) << e;
}

TEST(CheckGpus, AnIndexOutOfRangeOrNegativeOrRepeatedIsRefused) {
  EXPECT_TRUE(has(check_gpus({3}, gpus_seen(1)), "there is no GPU 3; torch sees 1 GPU(s), 0 to 0"));
  EXPECT_TRUE(has(check_gpus({-1}, gpus_seen(2)), "there is no GPU -1"));
  EXPECT_TRUE(has(check_gpus({0, 0}, gpus_seen(2)), "GPU 0 is named twice"));
}

}  // namespace check_gpus_test
}  // namespace kbv
