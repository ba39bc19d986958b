#include <catch2/catch.hpp>
#include <cstring>

#include "hal/api.h"
#include "hal/drivers/cpu/testing/test_device.h"

namespace hexir::hal {
namespace {

constexpr int32_t kF32 = static_cast<int32_t>(ElementType::kF32);
constexpr int32_t kI8 = static_cast<int32_t>(ElementType::kI8);

TEST_CASE("buffer view: accessors, byte size and shape string") {
  auto dev = testing::CpuDevice();
  auto buf = dev->AllocateBuffer(24);
  REQUIRE(buf.ok());
  auto view = BufferView::Create(*buf, kF32, {2, 3});
  REQUIRE(view.ok());
  REQUIRE((*view)->rank() == 2);
  REQUIRE((*view)->dim(1) == 3);
  REQUIRE((*view)->element_count() == 6);
  REQUIRE((*view)->byte_size() == 24);
  REQUIRE((*view)->element_type() == kF32);
  REQUIRE((*view)->ShapeString() == "2x3xf32");
  REQUIRE(&(*view)->buffer() == buf->get());

  auto scalar = BufferView::Create(*buf, kI8, {});
  REQUIRE(scalar.ok());
  REQUIRE((*scalar)->ShapeString() == "i8");
  REQUIRE((*scalar)->byte_size() == 1);
}

TEST_CASE("buffer view: a buffer too small, negative dims and unknown types are rejected") {
  auto dev = testing::CpuDevice();
  auto buf = dev->AllocateBuffer(20);
  REQUIRE(buf.ok());
  auto small = BufferView::Create(*buf, kF32, {2, 3});
  REQUIRE(small.status().code() == StatusCode::kInvalidArgument);
  REQUIRE(small.status().message() == "buffer view 2x3xf32 needs 24 bytes but the buffer holds 20");
  auto neg = BufferView::Create(*buf, kF32, {2, -1});
  REQUIRE(neg.status().message() == "dim 1 of 2x?xf32 is negative (-1)");
  auto type = BufferView::Create(*buf, 99, {1});
  REQUIRE(type.status().message() == "unknown element type code 99");
  auto huge = BufferView::Create(*buf, kF32, {int64_t{1} << 40, int64_t{1} << 40});
  REQUIRE(huge.status().code() == StatusCode::kInvalidArgument);
  REQUIRE(BufferView::Create(nullptr, kF32, {1}).status().message() == "buffer view: buffer is null");
}

TEST_CASE("host io: round trip and byte-size mismatch") {
  auto dev = testing::CpuDevice();
  const float data[6] = {1, 2, 3, 4, 5, 6};
  std::vector<int64_t> dims = {2, 3};
  auto bad = BufferViewFromHost(*dev, kF32, dims, data, 20);
  REQUIRE(bad.status().code() == StatusCode::kInvalidArgument);
  REQUIRE(bad.status().message() == "tensor 2x3xf32 needs 24 bytes, got 20");

  auto view = BufferViewFromHost(*dev, kF32, dims, data, sizeof(data));
  REQUIRE(view.ok());
  REQUIRE((*view)->ShapeString() == "2x3xf32");
  std::vector<uint8_t> out;
  REQUIRE(BufferViewToHost(*dev, **view, &out).ok());
  REQUIRE(out.size() == sizeof(data));
  REQUIRE(std::memcmp(out.data(), data, sizeof(data)) == 0);

  auto empty = BufferViewFromHost(*dev, kF32, std::vector<int64_t>{0, 4}, nullptr, 0);
  REQUIRE(empty.ok());
  REQUIRE(BufferViewToHost(*dev, **empty, &out).ok());
  REQUIRE(out.empty());
}

TEST_CASE("buffers: 64-byte aligned, zeroed, counted while alive") {
  auto dev = testing::CpuDevice();
  DeviceStats before = dev->stats();
  {
    auto a = dev->AllocateBuffer(100);
    auto b = dev->AllocateBuffer(0, kMemoryDeviceLocal);
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    REQUIRE(reinterpret_cast<uintptr_t>((*a)->host_data()) % 64 == 0);
    REQUIRE(((*b)->memory_types() & kMemoryHostVisible) != 0);  // CPU memory is host-visible
    for (int i = 0; i < 100; ++i) REQUIRE((*a)->host_data()[i] == 0);
    DeviceStats s = dev->stats();
    REQUIRE(s.buffers_live == before.buffers_live + 2);
    REQUIRE(s.buffer_bytes_live == before.buffer_bytes_live + 100);
    REQUIRE(s.buffers_allocated == before.buffers_allocated + 2);
  }
  DeviceStats after = dev->stats();
  REQUIRE(after.buffers_live == before.buffers_live);
  REQUIRE(after.buffer_bytes_live == before.buffer_bytes_live);
}

TEST_CASE("host io: read and write ranges are checked") {
  auto dev = testing::CpuDevice();
  auto buf = dev->AllocateBuffer(16);
  REQUIRE(buf.ok());
  uint8_t bytes[32] = {};
  Status s = dev->WriteBuffer(**buf, 8, bytes, 16);
  REQUIRE(s.code() == StatusCode::kOutOfRange);
  REQUIRE(s.message() == "write_buffer: range [8, 24) exceeds the buffer size 16");
  REQUIRE(dev->ReadBuffer(**buf, 17, bytes, 0).code() == StatusCode::kOutOfRange);
  REQUIRE(dev->WriteBuffer(**buf, 8, bytes, 8).ok());
}

}  // namespace
}  // namespace hexir::hal
