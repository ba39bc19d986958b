// The SPMD program of the rank-group tests (rank_group_test.cc through runtime::RankGroup,
// c_api_rank_group_test.cc through hexir_rank_group_*): a row-parallel matrix-vector product
// summed by all_reduce, y = all_reduce(sum, x_r . W_r), where rank r of N holds kRows / N rows
// of W [kRows][kCols] and the matching part of x. W and x are small integers, so every partial
// sum is exact in f32 and any split gives the reference's bits.
#pragma once

#include <cstdint>
#include <vector>

namespace hexir::e2e::row_parallel {

inline constexpr char kSource[] = R"(
func.func @main(%w: tensor<?x4xf32>, %x: tensor<?xf32>) -> tensor<4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %p = linalg.vecmat ins(%x, %w : tensor<?xf32>, tensor<?x4xf32>) outs(%z : tensor<4xf32>) -> tensor<4xf32>
  %s = hexir.all_reduce "sum" %p : tensor<4xf32>
  return %s : tensor<4xf32>
}
)";

inline constexpr int64_t kRows = 8;
inline constexpr int64_t kCols = 4;

inline float W(int64_t row, int64_t col) { return float((row * 7 + col * 3) % 11) - 5.0f; }
inline float X(int64_t row) { return float(row % 5) - 2.0f; }

// y, summed in plain C++ over every row.
inline std::vector<float> Reference() {
  std::vector<float> y(kCols, 0.0f);
  for (int64_t c = 0; c < kCols; ++c)
    for (int64_t r = 0; r < kRows; ++r) y[c] += X(r) * W(r, c);
  return y;
}

// Rank `rank` of `ranks`: its rows of W ([rows][kCols], row-major) and its part of x.
struct Shard {
  int64_t rows = 0;
  std::vector<float> w, x;
};
inline Shard ShardOf(int32_t rank, int32_t ranks) {
  Shard s;
  s.rows = kRows / ranks;
  const int64_t first = rank * s.rows;
  for (int64_t r = first; r < first + s.rows; ++r) {
    s.x.push_back(X(r));
    for (int64_t c = 0; c < kCols; ++c) s.w.push_back(W(r, c));
  }
  return s;
}

}  // namespace hexir::e2e::row_parallel
