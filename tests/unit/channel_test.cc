#include "proto/channel.h"

#include <unistd.h>

#include <gtest/gtest.h>

namespace kbv {
namespace channel_test {

struct Pipe {
  int r = -1, w = -1;
  Pipe() {
    int fds[2];
    EXPECT_EQ(::pipe(fds), 0);
    r = fds[0];
    w = fds[1];
  }
  ~Pipe() {
    if (r >= 0) ::close(r);
    if (w >= 0) ::close(w);
  }
};

using std::chrono::milliseconds;

TEST(Channel, RoundTrip) {
  Pipe p;
  nlohmann::json m = {{"op", "inputs"}, {"seed", 18446744073709551615ULL}, {"scale", -1.0}};
  ASSERT_EQ(write_message(p.w, m), "");
  ReadResult r = read_message(p.r, milliseconds(1000));
  ASSERT_EQ(r.status, ReadResult::Status::ok) << r.error;
  EXPECT_EQ(r.message, m);
  EXPECT_EQ(r.message["seed"].get<uint64_t>(), 18446744073709551615ULL);
}

TEST(Channel, TimeoutWhenNothingComes) {
  Pipe p;
  ReadResult r = read_message(p.r, milliseconds(50));
  EXPECT_EQ(r.status, ReadResult::Status::timeout);
}

TEST(Channel, EofWhenThePeerCloses) {
  Pipe p;
  ::close(p.w);
  p.w = -1;
  EXPECT_EQ(read_message(p.r, milliseconds(1000)).status, ReadResult::Status::eof);
}

TEST(Channel, ForgedHugeLengthIsRefusedWithoutAllocating) {
  Pipe p;
  unsigned char header[4] = {0xff, 0xff, 0xff, 0x7f};
  ASSERT_EQ(::write(p.w, header, 4), 4);
  ReadResult r = read_message(p.r, milliseconds(1000));
  EXPECT_EQ(r.status, ReadResult::Status::error);
  EXPECT_NE(r.error.find("exceeds the limit"), std::string::npos) << r.error;
  EXPECT_FALSE(r.framed);
}

TEST(Channel, MalformedBodyIsAnError) {
  Pipe p;
  const char body[] = "not json";
  unsigned char header[4] = {sizeof body - 1, 0, 0, 0};
  ASSERT_EQ(::write(p.w, header, 4), 4);
  ASSERT_EQ(::write(p.w, body, sizeof body - 1), static_cast<ssize_t>(sizeof body - 1));
  ReadResult r = read_message(p.r, milliseconds(1000));
  EXPECT_EQ(r.status, ReadResult::Status::error);
  EXPECT_TRUE(r.framed) << "the frame was read whole: the stream is still in step";
}

TEST(Channel, TruncatedMessageTimesOut) {
  Pipe p;
  unsigned char header[4] = {100, 0, 0, 0};
  ASSERT_EQ(::write(p.w, header, 4), 4);
  ASSERT_EQ(::write(p.w, "{\"op\"", 5), 5);
  EXPECT_EQ(read_message(p.r, milliseconds(100)).status, ReadResult::Status::timeout);
}

}  // namespace channel_test
}  // namespace kbv
