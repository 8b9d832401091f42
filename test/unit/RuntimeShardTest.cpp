// Blocks of sharded tensors (runtime/Shard.cpp) against index arithmetic
// written out per case.
#include "Shard.h"

#include <gtest/gtest.h>

#include <numeric>

using namespace colo::runtime;

namespace {
Shard makeShard(Shape full, int dim, int64_t groups = 1, bool flat = false) {
  Shard s;
  for (int64_t d : full)
    s.add_full_shape(d);
  s.set_dim(dim);
  s.set_groups(groups);
  s.set_flat(flat);
  return s;
}

std::vector<float> iota(int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), 0.0f);
  return v;
}
} // namespace

TEST(RuntimeShard, ColumnsOfAMatrix) {
  // [2, 4] split on dim 1 into 2: rank 1 holds columns 2 and 3.
  Shard s = makeShard({2, 4}, 1);
  EXPECT_EQ(shardShape(s, 2), (Shape{2, 2}));
  std::vector<float> full = iota(8), local(4);
  copyBlockOut(s, 1, 2, 4, full.data(), local.data());
  EXPECT_EQ(local, (std::vector<float>{2, 3, 6, 7}));
}

TEST(RuntimeShard, GroupedColumnsTakeABlockOfEachGroup) {
  // A fused QKV bias [12] = q|k|v of 4 each, 2 ranks: rank 1 holds q[2:4],
  // k[2:4], v[2:4].
  Shard s = makeShard({12}, 0, 3);
  std::vector<float> full = iota(12), local(6);
  copyBlockOut(s, 1, 2, 4, full.data(), local.data());
  EXPECT_EQ(local, (std::vector<float>{2, 3, 6, 7, 10, 11}));
}

TEST(RuntimeShard, FlatBlocksArePaddedWithZeros) {
  // 5 elements over 2 ranks: blocks of 3, the last padded.
  Shard s = makeShard({5}, 0, 1, true);
  EXPECT_EQ(shardShape(s, 2), (Shape{3}));
  std::vector<float> full = iota(5), local(3, -1);
  copyBlockOut(s, 1, 2, 4, full.data(), local.data());
  EXPECT_EQ(local, (std::vector<float>{3, 4, 0}));
}

TEST(RuntimeShard, BlocksPutBackRebuildTheWhole) {
  for (Shard s : {makeShard({4, 6}, 0), makeShard({4, 6}, 1, 3), makeShard({4, 6}, 0, 1, true),
                  makeShard({2, 3, 4}, 2, 2)}) {
    Shape full(s.full_shape().begin(), s.full_shape().end());
    std::vector<float> whole = iota(numElements(full)), rebuilt(whole.size(), -1);
    int64_t n = numElements(shardShape(s, 2));
    for (int64_t index = 0; index < 2; ++index) {
      std::vector<float> block(static_cast<size_t>(n));
      copyBlockOut(s, index, 2, 4, whole.data(), block.data());
      copyBlockIn(s, index, 2, 4, block.data(), rebuilt.data());
    }
    EXPECT_EQ(rebuilt, whole) << s.DebugString();
  }
}

TEST(RuntimeShard, FlatPartsOfAColumnBlock) {
  // ZeRO-3 over tp: [2, 4] split on dim 1 over tp=2, each block [2, 2]
  // flattened and cut over dp=3 into parts of 2 (the last padded). Index
  // tp * 3 + dp: rank (tp 1, dp 1) holds the block's flat elements 2 and
  // 3, that is full[1][2], full[1][3]; (tp 1, dp 2) holds nothing but padding.
  Shard s = makeShard({2, 4}, 1, 1, true);
  s.set_flat_parts(3);
  EXPECT_EQ(shardShape(s, 6), (Shape{2}));
  EXPECT_EQ(splitProblem(s, 6), "");
  std::vector<float> full = iota(8), local(2, -1);
  copyBlockOut(s, 4, 6, 4, full.data(), local.data());
  EXPECT_EQ(local, (std::vector<float>{6, 7}));
  copyBlockOut(s, 3, 6, 4, full.data(), local.data());
  EXPECT_EQ(local, (std::vector<float>{2, 3}));
  copyBlockOut(s, 5, 6, 4, full.data(), local.data());
  EXPECT_EQ(local, (std::vector<float>{0, 0}));
}

TEST(RuntimeShard, FlatPartsOfGroupedBlocksRebuildTheWhole) {
  // A fused QKV weight [3, 12] over tp=2 (groups 3), each block [3, 6]
  // flattened over dp=4 (18 elements: parts of 5, 2 of padding).
  Shard s = makeShard({3, 12}, 1, 3, true);
  s.set_flat_parts(4);
  ASSERT_EQ(splitProblem(s, 8), "");
  std::vector<float> whole = iota(36), rebuilt(whole.size(), -1);
  for (int64_t index = 0; index < 8; ++index) {
    std::vector<float> block(5);
    copyBlockOut(s, index, 8, 4, whole.data(), block.data());
    copyBlockIn(s, index, 8, 4, block.data(), rebuilt.data());
  }
  EXPECT_EQ(rebuilt, whole);
}

TEST(RuntimeShard, FlatPartsMustDivideTheGroup) {
  Shard s = makeShard({2, 4}, 1, 1, true);
  s.set_flat_parts(3);
  EXPECT_EQ(splitProblem(s, 4), "flat_parts 3 does not divide 4 parts");
  s.set_flat_parts(2);
  s.set_dim(0);
  EXPECT_EQ(splitProblem(s, 8), "dimension 0 of [2, 4] does not split into 1 groups of 4 parts");
  s.set_flat(false);
  EXPECT_EQ(splitProblem(s, 2), "flat_parts 2 without flat");
}

TEST(RuntimeShard, AHugeFlattenedBlockIsCheckedWithoutVisitingItsRows) {
  // 2^40 rows: checking the split must not walk them.
  Shard s = makeShard({int64_t(1) << 40, 4}, 1, 1, true);
  s.set_flat_parts(2);
  EXPECT_EQ(splitProblem(s, 4), "");
  EXPECT_EQ(shardShape(s, 4), (Shape{int64_t(1) << 40}));
}

TEST(RuntimeShard, TwoDimensionalBlocksOfAGrid) {
  // [4, 6] over a 2 x 2 grid (2-D tensor parallelism): rank (i, j), index
  // 2i + j, holds rows [2i, 2i + 2) and columns [3j, 3j + 3).
  Shard s = makeShard({4, 6}, 0);
  s.set_inner_dim(1);
  s.set_inner_parts(2);
  ASSERT_EQ(splitProblem(s, 4), "");
  EXPECT_EQ(shardShape(s, 4), (Shape{2, 3}));
  std::vector<float> full = iota(24), local(6);
  copyBlockOut(s, 3, 4, 4, full.data(), local.data());
  EXPECT_EQ(local, (std::vector<float>{15, 16, 17, 21, 22, 23}));
  copyBlockOut(s, 1, 4, 4, full.data(), local.data());
  EXPECT_EQ(local, (std::vector<float>{3, 4, 5, 9, 10, 11}));
}

TEST(RuntimeShard, TwoDimensionalGroupedBlocksRebuildTheWhole) {
  // A fused QKV weight [4, 12] (groups 3 on the columns) whose columns the
  // grid's last axis splits (inner_dim 1 by 2) and whose rows its first
  // axes split (dim 0 by 2): the groups go with the inner dimension here,
  // so the grouped dimension is dim and the rows are inner.
  Shard s = makeShard({4, 12}, 1, 3);
  s.set_inner_dim(0);
  s.set_inner_parts(2);
  ASSERT_EQ(splitProblem(s, 4), "");
  EXPECT_EQ(shardShape(s, 4), (Shape{2, 6}));
  std::vector<float> whole = iota(48), rebuilt(whole.size(), -1), block(12);
  for (int64_t index = 0; index < 4; ++index) {
    copyBlockOut(s, index, 4, 4, whole.data(), block.data());
    copyBlockIn(s, index, 4, 4, block.data(), rebuilt.data());
  }
  EXPECT_EQ(rebuilt, whole);
  // Index 1: column block 0 of each group (columns 0-1, 4-5, 8-9), rows 2-3.
  copyBlockOut(s, 1, 4, 4, whole.data(), block.data());
  EXPECT_EQ(block, (std::vector<float>{24, 25, 28, 29, 32, 33, 36, 37, 40, 41, 44, 45}));
}

TEST(RuntimeShard, TwoDimensionalSplitsAreChecked) {
  Shard s = makeShard({4, 6}, 0);
  s.set_inner_dim(1);
  s.set_inner_parts(4);
  EXPECT_EQ(splitProblem(s, 8), "dimension 1 of [4, 6] does not split into 4 parts");
  s.set_inner_parts(3);
  EXPECT_EQ(splitProblem(s, 4), "inner_parts 3 does not divide 4 parts");
  s.set_inner_parts(2);
  s.set_inner_dim(0);
  EXPECT_EQ(splitProblem(s, 4), "inner_dim 0 is not a dimension of [4, 6] other than dim 0");
  s.set_inner_dim(1);
  s.set_flat(true);
  EXPECT_EQ(splitProblem(s, 4), "inner_parts with a whole flattened tensor");
}

TEST(RuntimeShard, FlatPartsOfATwoDimensionalBlockRebuildTheWhole) {
  // ZeRO over 2-D tensor parallelism: [4, 6] in 2 x 2 blocks, each [2, 3]
  // flattened over dp = 2 (parts of 3). Index (block * 2 + dp part).
  Shard s = makeShard({4, 6}, 1, 1, true);
  s.set_inner_dim(0);
  s.set_inner_parts(2);
  s.set_flat_parts(2);
  ASSERT_EQ(splitProblem(s, 8), "");
  EXPECT_EQ(shardShape(s, 8), (Shape{3}));
  std::vector<float> whole = iota(24), rebuilt(whole.size(), -1), part(3);
  for (int64_t index = 0; index < 8; ++index) {
    copyBlockOut(s, index, 8, 4, whole.data(), part.data());
    copyBlockIn(s, index, 8, 4, part.data(), rebuilt.data());
  }
  EXPECT_EQ(rebuilt, whole);
  // Index 3: block 1 (columns 0-2 of rows 2-3), its second part: row 3.
  copyBlockOut(s, 3, 8, 4, whole.data(), part.data());
  EXPECT_EQ(part, (std::vector<float>{18, 19, 20}));
}
