// kAuto's request sizes on callback and async calls
// (src/grpc/request_sizes.h): walked until a run of calls agrees, then
// taken as known and checked on 1 call in 8 (drawn at random).
#include "src/grpc/request_sizes.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace arenarpc::internal {
namespace {

// ForCall() with the draws 0 .. n-1; returns how many asked to be sized.
int Asks(const RequestSizes& sizes, int n) {
  int asks = 0;
  for (int i = 0; i < n; ++i) {
    asks += sizes.ForCall(static_cast<uint32_t>(i)) < 0 ? 1 : 0;
  }
  return asks;
}

TEST(RequestSizesTest, EveryCallIsSizedUntilARunAgrees) {
  RequestSizes sizes;
  for (int i = 0; i < RequestSizes::kRun - 1; ++i) {
    EXPECT_EQ(Asks(sizes, 8), 8);
    sizes.Note(1000 + i);  // within 1/64 of the first
  }
  EXPECT_EQ(Asks(sizes, 8), 8);
  sizes.Note(1000);
  // Known now: the run's first size; a draw of 0 mod kCheckEvery checks.
  EXPECT_EQ(Asks(sizes, 64), 64 / static_cast<int>(RequestSizes::kCheckEvery));
  EXPECT_LT(sizes.ForCall(RequestSizes::kCheckEvery * 3), 0);
  EXPECT_EQ(sizes.ForCall(RequestSizes::kCheckEvery * 3 + 1), 1000);
}

TEST(RequestSizesTest, ASizeOutsideTheBandStartsOver) {
  RequestSizes sizes;
  for (int i = 0; i < RequestSizes::kRun; ++i) sizes.Note(64000);
  EXPECT_LT(Asks(sizes, 16), 16);
  sizes.Note(64000 + 1001);  // more than 1/64 away: a check that failed
  EXPECT_EQ(Asks(sizes, 16), 16);
  // A new run at the new size settles it again.
  for (int i = 0; i < RequestSizes::kRun - 1; ++i) sizes.Note(65001);
  EXPECT_EQ(sizes.ForCall(1), 65001);
}

TEST(RequestSizesTest, SizesThatKeepChangingAreAlwaysSized) {
  RequestSizes sizes;
  for (int i = 0; i < 100; ++i) {
    sizes.Note(i % 2 == 0 ? 10000 : 12000);
    EXPECT_EQ(Asks(sizes, 8), 8) << "after note " << i;
  }
}

TEST(RequestSizesTest, TheBandIsASixtyFourthOfTheFirstSize) {
  RequestSizes sizes;
  sizes.Note(6400);
  for (int i = 1; i < RequestSizes::kRun; ++i) sizes.Note(6500);  // +1/64
  EXPECT_EQ(sizes.ForCall(1), 6400);
  RequestSizes other;
  other.Note(6400);
  for (int i = 1; i < RequestSizes::kRun; ++i) other.Note(6501);  // beyond
  EXPECT_EQ(Asks(other, 16), 16);
}

TEST(RequestSizesTest, ForgetStartsOver) {
  RequestSizes sizes;
  for (int i = 0; i < RequestSizes::kRun; ++i) sizes.Note(5000);
  EXPECT_EQ(sizes.ForCall(1), 5000);
  sizes.Forget();
  EXPECT_EQ(Asks(sizes, 16), 16);
  // The run counts from zero again: the same size needs kRun more notes.
  for (int i = 0; i < RequestSizes::kRun - 1; ++i) sizes.Note(5000);
  EXPECT_LT(sizes.ForCall(1), 0);
  sizes.Note(5000);
  EXPECT_EQ(sizes.ForCall(1), 5000);
}

}  // namespace
}  // namespace arenarpc::internal
