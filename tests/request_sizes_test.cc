// kAuto's request sizes on callback and async calls
// (src/grpc/request_sizes.h): walked until a run of calls agrees, then
// taken as known and checked on 1 call in 8.
#include "src/grpc/request_sizes.h"

#include <gtest/gtest.h>

namespace arenarpc::internal {
namespace {

// Calls ForCall() n times; returns how many asked to be sized.
int Asks(RequestSizes& sizes, int n) {
  int asks = 0;
  for (int i = 0; i < n; ++i) asks += sizes.ForCall() < 0 ? 1 : 0;
  return asks;
}

TEST(RequestSizesTest, EveryCallIsSizedUntilARunAgrees) {
  RequestSizes sizes;
  for (int i = 0; i < RequestSizes::kRun - 1; ++i) {
    EXPECT_LT(sizes.ForCall(), 0);
    sizes.Note(1000 + i);  // within 1/64 of the first
  }
  EXPECT_LT(sizes.ForCall(), 0);
  sizes.Note(1000);
  // Known now: the run's first size, with 1 call in kCheckEvery sized.
  EXPECT_EQ(Asks(sizes, 64), 64 / static_cast<int>(RequestSizes::kCheckEvery));
  double known = -1;
  for (int i = 0; i < 8 && known < 0; ++i) known = sizes.ForCall();
  EXPECT_EQ(known, 1000);
}

TEST(RequestSizesTest, ASizeOutsideTheBandStartsOver) {
  RequestSizes sizes;
  for (int i = 0; i < RequestSizes::kRun; ++i) sizes.Note(64000);
  EXPECT_LT(Asks(sizes, 16), 16);
  sizes.Note(64000 + 1001);  // more than 1/64 away: a check that failed
  EXPECT_EQ(Asks(sizes, 16), 16);
  // A new run at the new size settles it again.
  for (int i = 0; i < RequestSizes::kRun - 1; ++i) sizes.Note(65001);
  EXPECT_LT(Asks(sizes, 16), 16);
}

TEST(RequestSizesTest, SizesThatKeepChangingAreAlwaysSized) {
  RequestSizes sizes;
  for (int i = 0; i < 100; ++i) {
    sizes.Note(i % 2 == 0 ? 10000 : 12000);
    EXPECT_LT(sizes.ForCall(), 0) << "after note " << i;
  }
}

TEST(RequestSizesTest, TheBandIsASixtyFourthOfTheFirstSize) {
  RequestSizes sizes;
  sizes.Note(6400);
  for (int i = 1; i < RequestSizes::kRun; ++i) sizes.Note(6500);  // +1/64
  EXPECT_LT(Asks(sizes, 16), 16);
  RequestSizes other;
  other.Note(6400);
  for (int i = 1; i < RequestSizes::kRun; ++i) other.Note(6501);  // beyond
  EXPECT_EQ(Asks(other, 16), 16);
}

}  // namespace
}  // namespace arenarpc::internal
