#include <catch2/catch.hpp>
#include <cstring>

#include "hal/api.h"
#include "hal/drivers/cpu/testing/test_device.h"
#include "hal/drivers/cpu/testing/test_kernels.h"

namespace hexir::hal {
namespace {

vm::Ref<CommandBuffer> NewCb(Device& d) {
  auto cb = d.CreateCommandBuffer();
  REQUIRE(cb.ok());
  return *cb;
}

TEST_CASE("command buffer: copy and fill ranges are checked at record time") {
  auto dev = testing::CpuDevice(1);
  auto a = testing::DeviceBuffer(*dev, 64), b = testing::DeviceBuffer(*dev, 32);
  auto cb = NewCb(*dev);
  Status s = cb->CopyBuffer(a, 0, b, 16, 32);
  REQUIRE(s.code() == StatusCode::kOutOfRange);
  REQUIRE(s.message() == "copy_buffer target: range [16, 48) exceeds the buffer size 32");
  s = cb->CopyBuffer(a, 65, b, 0, 1);
  REQUIRE(s.message() == "copy_buffer source: offset 65 is past the end of a 64-byte buffer");
  s = cb->CopyBuffer(nullptr, 0, b, 0, 1);
  REQUIRE(s.message() == "copy_buffer source: buffer is null");
  s = cb->FillBuffer(b, 0, 40, 1, 1);
  REQUIRE(s.message() == "fill_buffer: range [0, 40) exceeds the buffer size 32");
  s = cb->FillBuffer(b, 2, 8, 1, 4);
  REQUIRE(s.message() == "fill_buffer: offset 2 and length 8 must be multiples of the pattern size 4");
  s = cb->FillBuffer(b, 0, 8, 1, 3);
  REQUIRE(s.message() == "fill_buffer: pattern size 3 is not 1, 2 or 4");
  REQUIRE(cb->commands().empty());  // failed calls record nothing
}

TEST_CASE("command buffer: copies and fills execute like memcpy/memset") {
  auto dev = testing::CpuDevice(1);
  auto a = testing::DeviceBuffer(*dev, 64), b = testing::DeviceBuffer(*dev, 64);
  for (int i = 0; i < 64; ++i) a->host_data()[i] = static_cast<uint8_t>(i);
  auto cb = NewCb(*dev);
  REQUIRE(cb->CopyBuffer(a, 8, b, 0, 16).ok());
  REQUIRE(cb->Barrier().ok());
  REQUIRE(cb->FillBuffer(b, 16, 8, 0xAABB, 2).ok());
  REQUIRE(cb->FillBuffer(b, 24, kWholeBuffer, 0x7, 1).ok());
  REQUIRE(cb->Finalize().ok());
  REQUIRE(dev->QueueExecute({}, cb, {}).ok());
  REQUIRE(dev->WaitIdle().ok());
  uint8_t expect[64];
  std::memcpy(expect, a->host_data() + 8, 16);
  for (int i = 16; i < 24; i += 2) { expect[i] = 0xBB; expect[i + 1] = 0xAA; }
  for (int i = 24; i < 64; ++i) expect[i] = 7;
  REQUIRE(std::memcmp(b->host_data(), expect, 64) == 0);
}

TEST_CASE("command buffer: recorded once, submitted many times") {
  auto dev = testing::CpuDevice(1);
  auto a = testing::DeviceBuffer(*dev, 64), b = testing::DeviceBuffer(*dev, 64);
  auto cb = NewCb(*dev);
  REQUIRE(cb->CopyBuffer(a, 0, b, 0, 4).ok());
  REQUIRE(cb->Finalize().ok());
  DeviceStats before = dev->stats();
  auto sem = *dev->CreateSemaphore(0);
  for (uint32_t i = 1; i <= 5; ++i) {
    std::memcpy(a->host_data(), &i, 4);
    REQUIRE(dev->QueueExecute({}, cb, {{sem, i}}).ok());
    REQUIRE(sem->Wait(i).ok());
    uint32_t got;
    std::memcpy(&got, b->host_data(), 4);
    REQUIRE(got == i);
  }
  DeviceStats after = dev->stats();
  REQUIRE(after.command_buffers_recorded == before.command_buffers_recorded);
  REQUIRE(after.queue_submissions == before.queue_submissions + 5);
  REQUIRE(dev->stats().command_buffers_recorded == 1);
}

TEST_CASE("command buffer: barriers are counted once, when the recording is finalized") {
  auto dev = testing::CpuDevice(1);
  auto a = testing::DeviceBuffer(*dev, 64), b = testing::DeviceBuffer(*dev, 64);
  auto cb = NewCb(*dev);
  REQUIRE(cb->CopyBuffer(a, 0, b, 0, 4).ok());
  REQUIRE(cb->Barrier().ok());
  REQUIRE(cb->CopyBuffer(b, 0, a, 8, 4).ok());
  REQUIRE(cb->Barrier().ok());
  REQUIRE(cb->FillBuffer(b, 16, 4, 7, 4).ok());
  REQUIRE(dev->stats().barriers_recorded == 0);
  REQUIRE(cb->Finalize().ok());
  REQUIRE(dev->stats().barriers_recorded == 2);
  for (int i = 0; i < 3; ++i) REQUIRE(dev->QueueExecute({}, cb, {}).ok());
  REQUIRE(dev->WaitIdle().ok());
  REQUIRE(dev->stats().barriers_recorded == 2);
}

TEST_CASE("command buffer: misuse is reported") {
  auto dev = testing::CpuDevice(1);
  auto a = testing::DeviceBuffer(*dev, 64);
  auto cb = NewCb(*dev);
  REQUIRE(cb->FillBuffer(a, 0, 4, 1, 4).ok());
  Status s = dev->QueueExecute({}, cb, {});
  REQUIRE(s.code() == StatusCode::kFailedPrecondition);
  REQUIRE(s.message() ==
          "queue execute: the command buffer is still recording; finalize it before submitting");
  REQUIRE(cb->Finalize().ok());
  s = cb->FillBuffer(a, 0, 4, 1, 4);
  REQUIRE(s.code() == StatusCode::kFailedPrecondition);
  REQUIRE(s.message() == "command buffer fill_buffer: the command buffer is finalized; record a new one");
  REQUIRE(cb->Finalize().code() == StatusCode::kFailedPrecondition);
  REQUIRE(dev->QueueExecute({}, nullptr, {}).message() == "queue execute: command buffer is null");
  REQUIRE(dev->QueueExecute({{nullptr, 1}}, cb, {}).message() ==
          "queue execute: wait semaphore 0 is null");
  REQUIRE(cb->Dispatch(nullptr, 0, {1, 1, 1}, {}).code() == StatusCode::kFailedPrecondition);
  auto cb2 = NewCb(*dev);
  REQUIRE(cb2->Dispatch(nullptr, 0, {1, 1, 1}, {}).message() == "dispatch: executable is null");
  REQUIRE(dev->stats().command_buffers_recorded == 1);
}

TEST_CASE("command buffer: indirect dispatch recording") {
  auto dev = testing::CpuDevice(1);
  auto exe = *dev->CreateExecutable(cpu::testing::TestKernelView({"add_f32"}));
  auto counts = testing::DeviceBuffer(*dev, 64);
  auto cb = NewCb(*dev);
  BufferRef slot = BufferRef::Slot(4);
  slot.offset = 8;
  REQUIRE(cb->DispatchIndirect(exe, 0, slot, {BufferRef::Slot(1)}, {7}).ok());
  REQUIRE(cb->binding_table_size() == 5);  // the count slot counts too
  REQUIRE(cb->DispatchIndirect(exe, 0, BufferRef::Range(counts, 52, 99), {}).ok());
  REQUIRE(cb->commands().size() == 2);
  const auto& d0 = std::get<DispatchCommand>(cb->commands()[0]);
  REQUIRE(d0.indirect);
  REQUIRE(d0.workgroup_count == std::array<uint32_t, 3>{0, 0, 0});
  REQUIRE(d0.workgroup_count_ref.slot == 4);
  REQUIRE(d0.workgroup_count_ref.offset == 8);
  REQUIRE(d0.push_constants == std::vector<uint32_t>{7});
  // The recorded range is exactly the 12 count bytes, whatever length was passed.
  REQUIRE(std::get<DispatchCommand>(cb->commands()[1]).workgroup_count_ref.length == kIndirectParamsSize);
  Status s = cb->DispatchIndirect(exe, 1, BufferRef::Range(counts, 0, 12), {});
  REQUIRE(s.code() == StatusCode::kOutOfRange);
  s = cb->DispatchIndirect(exe, 0, BufferRef::Range(counts, 56, 12), {});
  REQUIRE(s.message() == "dispatch_indirect of 'add_f32': workgroup count buffer: range [56, 68) exceeds the buffer size 64");
  s = cb->DispatchIndirect(exe, 0, BufferRef(), {});
  REQUIRE(s.message() == "dispatch_indirect of 'add_f32': workgroup count buffer: buffer is null");
  REQUIRE(cb->commands().size() == 2);  // failed calls record nothing
  REQUIRE(cb->Finalize().ok());
  s = cb->DispatchIndirect(exe, 0, slot, {});
  REQUIRE(s.message() == "command buffer dispatch_indirect: the command buffer is finalized; record a new one");
  // Direct dispatch counts above 2^40 workgroups are refused at record time.
  auto cb2 = NewCb(*dev);
  s = cb2->Dispatch(exe, 0, {1u << 20, 1u << 20, 2}, {});
  REQUIRE(s.message() == "dispatch of 'add_f32': workgroup count 1048576x1048576x2 exceeds 2^40 workgroups");
  REQUIRE(WorkgroupCountFits({1u << 20, 1u << 20, 1}));
  REQUIRE(!WorkgroupCountFits({UINT32_MAX, UINT32_MAX, 0}));  // x*y alone is too many
}

}  // namespace
}  // namespace hexir::hal
