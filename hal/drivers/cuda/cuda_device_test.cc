// CUDA-specific behaviour beyond the conformance suite: device selection, graph replay with
// in-place node updates (never re-instantiation), concurrency of independent dispatches,
// barriers as edges, out of memory, stream command buffers, PTX fallback, asynchronous
// submission, retirement by whichever host wait or thread gets there first, interrupted reads,
// ABI checks, the stats the compiler and tools assert on, and the topology it reports.
//
// Without a GPU (or without the nvcc-built kernels) every case prints one
// "HEXIR_SKIPPED: <case>: <reason>" line and makes no assertion.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <thread>

#include "hal/api.h"
#include "hal/drivers/cuda/cuda_device.h"
#include "hal/drivers/cuda/cuda_peer_link.h"
#include "hal/drivers/cuda/cuda_shared.h"
#include "hal/drivers/cuda/testing/device_helpers.h"
#include "hal/drivers/cuda/testing/open_or_skip.h"
#include "hal/drivers/cuda/testing/test_kernels.h"
#include "hal/topology.h"

namespace hexir::hal::cuda {
namespace {

using namespace std::chrono_literals;
using testing::Alloc;
using testing::CubinView;
using testing::OpenOrSkip;
using testing::Stats;

vm::Ref<Executable> Load(Device& d, const vm::ExecutableView& view) {
  auto exe = d.CreateExecutable(view);
  INFO(exe.status().ToString());
  REQUIRE(exe.ok());
  return *exe;
}

template <typename T>
void Upload(Device& d, Buffer& b, const std::vector<T>& v) {
  REQUIRE(d.WriteBuffer(b, 0, v.data(), v.size() * sizeof(T)).ok());
}

template <typename T>
std::vector<T> Download(Device& d, Buffer& b, size_t n) {
  std::vector<T> v(n);
  Status s = d.ReadBuffer(b, 0, v.data(), n * sizeof(T));
  INFO(s.ToString());
  REQUIRE(s.ok());
  return v;
}

void Run(Device& d, const vm::Ref<CommandBuffer>& cb, std::vector<BufferRef> table = {}) {
  auto sem = d.CreateSemaphore(0);
  REQUIRE(sem.ok());
  Status s = d.QueueExecute({}, cb, {{*sem, 1}}, table);
  INFO(s.ToString());
  REQUIRE(s.ok());
  Status w = (*sem)->Wait(1, 30s);
  INFO(w.ToString());
  REQUIRE(w.ok());
}

TEST_CASE("cuda/device_selection") {
  auto dev = OpenOrSkip();
  if (!dev) return;
  Device& d = **dev;
  REQUIRE(d.uri() == "cuda:0");
  auto count = DeviceCount();
  REQUIRE(count.ok());
  REQUIRE(*count >= 1);
  auto zero = CreateDevice("cuda:0");
  REQUIRE(zero.ok());
  auto far = CreateDevice("cuda:1000");
  REQUIRE(far.status().code() == StatusCode::kInvalidArgument);
  REQUIRE(far.status().message().find("out of range") != std::string::npos);
  REQUIRE(far.status().message().find("CUDA device(s)") != std::string::npos);
  REQUIRE(CreateDevice("cuda:x").status().code() == StatusCode::kInvalidArgument);
  auto cpu = CreateDevice("cpu");
  REQUIRE(cpu.ok());
  REQUIRE(GetCudaStats(**cpu).status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("cuda/a group of two ranks on one GPU is refused by name before NCCL is called") {
  auto dev = OpenOrSkip();
  if (!dev) return;
  auto again = CreateDevice("cuda:0");
  REQUIRE(again.ok());
  auto channels = (*dev)->CreateGroupChannels({dev->get(), again->get()});
  REQUIRE(channels.status().code() == StatusCode::kInvalidArgument);
  REQUIRE(channels.status().message() ==
          "create group channels: devices 0 and 1 ('cuda:0', 'cuda:0') are the same GPU 0; NCCL runs one "
          "rank per GPU (give each rank its own GPU, or run the ranks on CPU devices)");
}

TEST_CASE("cuda/pinned_host_pool_classes_and_cap (no GPU needed)") {
  // Pure bookkeeping: fake block addresses, nothing is allocated or freed.
  CHECK(PinnedHostPool::ClassBytes(1) == 256);
  CHECK(PinnedHostPool::ClassBytes(256) == 256);
  CHECK(PinnedHostPool::ClassBytes(257) == 512);
  CHECK(PinnedHostPool::ClassBytes(5000) == 8192);
  PinnedHostPool pool;
  pool.max_cached_bytes = 1024;
  int blocks[3];
  CHECK(pool.Take(256) == nullptr);
  CHECK(pool.Give(&blocks[0], 512));
  CHECK(pool.Give(&blocks[1], 512));
  CHECK_FALSE(pool.Give(&blocks[2], 256));  // over the cap: the caller frees it
  CHECK(pool.cached_bytes == 1024);
  CHECK(pool.Take(256) == nullptr);  // another class
  void* got = pool.Take(512);
  CHECK((got == &blocks[0] || got == &blocks[1]));
  CHECK(pool.cached_bytes == 512);
  CHECK(pool.Take(512) != nullptr);
  CHECK(pool.Take(512) == nullptr);
  CHECK(pool.cached_bytes == 0);
}

TEST_CASE("cuda/peer_link_from_driver_answers (no GPU needed)") {
  CHECK_FALSE(PeerLinkFromAttributes(0, 0).access);
  CHECK_FALSE(PeerLinkFromAttributes(0, 1).nvlink);  // atomics without access: no link at all
  CHECK(PeerLinkFromAttributes(1, 0).access);
  CHECK_FALSE(PeerLinkFromAttributes(1, 0).nvlink);  // PCIe peers
  CHECK(PeerLinkFromAttributes(1, 1).access);
  CHECK(PeerLinkFromAttributes(1, 1).nvlink);
}

// --list-devices and hexir.devices() print DescribeLink: two logical devices of one GPU are
// the same device; every pair of GPUs says what cuDeviceCanAccessPeer and the native-atomics
// P2P attribute say, in both directions (on a machine of one GPU only the first part runs).
TEST_CASE("cuda/topology_reports_same_device_peers_and_nvlink_as_the_driver_does") {
  auto dev = OpenOrSkip();
  if (!dev) return;
  auto again = CreateDevice("cuda:0");
  REQUIRE(again.ok());
  DeviceLink same = DescribeLink(**dev, **again);
  CHECK(same.shared_memory);
  CHECK(same.peer_access);
  CHECK(LinkKindName(same.link) == "same device");
  auto cpu = CreateDevice("cpu");
  REQUIRE(cpu.ok());
  CHECK(LinkKindName(DescribeLink(**cpu, **dev).link) == "PCIe");

  auto api = LoadCudaApi();
  REQUIRE(api.ok());
  auto count = DeviceCount();
  REQUIRE(count.ok());
  for (int j = 1; j < *count; ++j) {
    auto other = CreateDevice("cuda:" + std::to_string(j));
    REQUIRE(other.ok());
    CUdevice d0 = 0, dj = 0;
    REQUIRE((*api)->cuDeviceGet(&d0, 0) == CUDA_SUCCESS);
    REQUIRE((*api)->cuDeviceGet(&dj, j) == CUDA_SUCCESS);
    int access_0j = 0, access_j0 = 0, atomics_0j = 0, atomics_j0 = 0;
    REQUIRE((*api)->cuDeviceCanAccessPeer(&access_0j, d0, dj) == CUDA_SUCCESS);
    REQUIRE((*api)->cuDeviceCanAccessPeer(&access_j0, dj, d0) == CUDA_SUCCESS);
    (*api)->cuDeviceGetP2PAttribute(&atomics_0j, CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED, d0, dj);
    (*api)->cuDeviceGetP2PAttribute(&atomics_j0, CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED, dj, d0);
    DeviceLink link = DescribeLink(**dev, **other);
    INFO("cuda:0 <-> cuda:" << j);
    CHECK_FALSE(link.shared_memory);
    CHECK(link.peer_access == (access_0j && access_j0));
    const bool nvlink = access_0j && access_j0 && atomics_0j && atomics_j0;
    CHECK(LinkKindName(link.link) == (nvlink ? "NVLink" : "PCIe"));
  }
}

TEST_CASE("cuda/graph_replay_updates_nodes_without_reinstantiation") {
  auto dev = OpenOrSkip();
  if (!dev) return;
  Device& d = **dev;
  CudaStats s0 = Stats(d);
  auto exe = Load(d, CubinView({"add_f32", "affine_i32"}));
  REQUIRE(Stats(d).module_loads == s0.module_loads + 1);
  const uint32_t n = 1000;
  auto x = Alloc(d, 4 * 4);
  auto cb = *d.CreateCommandBuffer();
  REQUIRE(cb->Dispatch(exe, 0, {(n + 127) / 128, 1, 1},
                       {BufferRef::Slot(0), BufferRef::Slot(1), BufferRef::Slot(2)}, {n, 128})
              .ok());
  REQUIRE(cb->Dispatch(exe, 1, {4, 1, 1}, {BufferRef::Whole(x)}, {4, 1, 1}).ok());  // direct
  REQUIRE(cb->Finalize().ok());
  auto info = DescribeGraph(*cb);
  REQUIRE(info.ok());
  REQUIRE(info->nodes == 2);
  REQUIRE(info->edges == 0);
  REQUIRE_FALSE(info->instantiated);

  auto a = Alloc(d, n * 4), b = Alloc(d, n * 4), out1 = Alloc(d, n * 4), out2 = Alloc(d, n * 4);
  std::vector<float> ha(n), hb(n), expect(n);
  for (uint32_t i = 0; i < n; ++i) {
    ha[i] = i * 0.5f;
    hb[i] = 100.0f - i;
    expect[i] = ha[i] + hb[i];
  }
  Upload(d, *a, ha);
  Upload(d, *b, hb);
  std::vector<BufferRef> t1 = {BufferRef::Whole(a), BufferRef::Whole(b), BufferRef::Whole(out1)};
  std::vector<BufferRef> t2 = {BufferRef::Whole(a), BufferRef::Whole(b), BufferRef::Whole(out2)};

  CudaStats s1 = Stats(d);
  Run(d, cb, t1);
  CudaStats s2 = Stats(d);
  REQUIRE(s2.graph_instantiations == s1.graph_instantiations + 1);
  REQUIRE(s2.kernel_node_updates == s1.kernel_node_updates + 1);  // only the slot node
  REQUIRE(s2.graph_launches == s1.graph_launches + 1);
  REQUIRE(Download<float>(d, *out1, n) == expect);

  Run(d, cb, t1);  // same table: nothing to update
  CudaStats s3 = Stats(d);
  REQUIRE(s3.graph_instantiations == s2.graph_instantiations);
  REQUIRE(s3.kernel_node_updates == s2.kernel_node_updates);
  REQUIRE(s3.graph_launches == s2.graph_launches + 1);

  Run(d, cb, t2);  // new output buffer: one node updated in place
  CudaStats s4 = Stats(d);
  REQUIRE(s4.graph_instantiations == s3.graph_instantiations);
  REQUIRE(s4.kernel_node_updates == s3.kernel_node_updates + 1);
  REQUIRE(Download<float>(d, *out2, n) == expect);
  REQUIRE(Download<int32_t>(d, *x, 4) == std::vector<int32_t>{3, 3, 3, 3});  // 3 runs of +1
  REQUIRE(Stats(d).module_loads == s0.module_loads + 1);
  REQUIRE(DescribeGraph(*cb)->instantiated);
}

TEST_CASE("cuda/repeat_while_is_one_graph_launch_with_the_condition_on_the_device") {
  auto dev = OpenOrSkip();
  if (!dev) return;
  Device& d = **dev;
  auto exe = Load(d, CubinView({"affine_i32"}));
  const uint32_t n = 8;
  // Body: x (slot 0) = 2x + 1; condition (slot 1) -= 1.
  auto body = *d.CreateCommandBuffer();
  REQUIRE(body->Dispatch(exe, 0, {n, 1, 1}, {BufferRef::Slot(0)}, {n, 2, 1}).ok());
  REQUIRE(body->Dispatch(exe, 0, {1, 1, 1}, {BufferRef::Slot(1)}, {1, 1, uint32_t(-1)}).ok());
  REQUIRE(body->Finalize().ok());
  auto cb = *d.CreateCommandBuffer();
  REQUIRE(cb->RepeatWhile(body, BufferRef::Slot(1), 1000).ok());
  REQUIRE(cb->Finalize().ok());
  auto info = DescribeGraph(*cb);
  REQUIRE(info.ok());
  REQUIRE(info->nodes == 2);  // the enter kernel -> the WHILE node (the body is inside it)
  REQUIRE(info->edges == 1);
  CudaStats s0 = Stats(d);
  for (int32_t iterations : {6, 3, 0}) {
    auto x = Alloc(d, 64), flag = Alloc(d, 64);
    std::vector<int32_t> hx(n);
    for (uint32_t i = 0; i < n; ++i) hx[i] = static_cast<int32_t>(i);
    Upload(d, *x, hx);
    Upload(d, *flag, std::vector<int32_t>{iterations});
    CudaStats before = Stats(d);
    Run(d, cb, {BufferRef::Whole(x), BufferRef::Whole(flag)});
    CudaStats after = Stats(d);
    REQUIRE(after.graph_launches == before.graph_launches + 1);
    REQUIRE(after.stream_launches == before.stream_launches);
    REQUIRE(after.host_synchronizations == before.host_synchronizations + 1);  // Run's wait
    auto got = Download<int32_t>(d, *x, n);
    for (uint32_t i = 0; i < n; ++i) REQUIRE(got[i] == (hx[i] + 1) * (1 << iterations) - 1);
    REQUIRE(Download<int32_t>(d, *flag, 1)[0] == 0);
  }
  // New buffers each time: the body's nodes and the condition kernels are updated in place.
  CudaStats s1 = Stats(d);
  REQUIRE(s1.graph_instantiations == s0.graph_instantiations + 1);
  REQUIRE(s1.kernel_node_updates > s0.kernel_node_updates);
}

TEST_CASE("cuda/uniform_slots_are_staged_into_a_shadow_and_need_no_node_update") {
  auto dev = OpenOrSkip();
  if (!dev) return;
  Device& d = **dev;
  auto exe = Load(d, CubinView({"add_f32"}));
  const uint32_t n = 64;
  auto cb = *d.CreateCommandBuffer();
  REQUIRE(cb->Dispatch(exe, 0, {1, 1, 1},
                       {BufferRef::Slot(0), BufferRef::Slot(1), BufferRef::Slot(2)}, {n, 64})
              .ok());
  REQUIRE(cb->Finalize().ok());
  auto a = Alloc(d, n * 4), out = Alloc(d, n * 4);
  Upload(d, *a, std::vector<float>(n, 1.0f));
  CudaStats s0 = Stats(d);
  // Every call brings a new uniform buffer (as compiled programs do with their parameters),
  // written by the host before the submission; a later call's host write must not reach an
  // earlier submission, and the graph node keeps pointing at the slot's shadow.
  std::vector<vm::Ref<Buffer>> keep;
  for (int call = 0; call < 5; ++call) {
    auto u = d.AllocateBuffer(n * 4, kMemoryHostVisible | kMemoryUniform);
    REQUIRE(u.ok());
    REQUIRE(((*u)->memory_types() & kMemoryUniform) != 0);
    std::vector<float> v(n, float(10 * call));
    std::memcpy((*u)->host_data(), v.data(), n * 4);
    auto sem = *d.CreateSemaphore(0);
    REQUIRE(d.QueueExecute({}, cb, {{sem, 1}},
                           {BufferRef::Whole(a), BufferRef::Whole(*u), BufferRef::Whole(out)})
                .ok());
    std::vector<float> got(n, -1.0f);
    REQUIRE(d.ReadBufferAfterPendingWork(*out, 0, got.data(), n * 4).ok());
    REQUIRE(got == std::vector<float>(n, 1.0f + 10 * call));
    keep.push_back(*u);
  }
  CudaStats s1 = Stats(d);
  CHECK(s1.kernel_node_updates == s0.kernel_node_updates + 1);  // the first launch only
  CHECK(s1.graph_launches == s0.graph_launches + 5);
  // Queued back to back without reads: each launch sees its own uniform contents.
  std::vector<vm::Ref<Buffer>> outs;
  for (int call = 0; call < 4; ++call) {
    auto u = *d.AllocateBuffer(n * 4, kMemoryHostVisible | kMemoryUniform);
    std::vector<float> v(n, float(call));
    std::memcpy(u->host_data(), v.data(), n * 4);
    auto o = Alloc(d, n * 4);
    auto cb2 = *d.CreateCommandBuffer();
    REQUIRE(cb2->CopyBuffer(out, 0, o, 0, n * 4).ok());
    REQUIRE(cb2->Finalize().ok());
    REQUIRE(d.QueueExecute({}, cb, {}, {BufferRef::Whole(a), BufferRef::Whole(u), BufferRef::Whole(out)}).ok());
    REQUIRE(d.QueueExecute({}, cb2, {}, {}).ok());
    outs.push_back(o);
  }
  REQUIRE(d.WaitIdle().ok());
  for (int call = 0; call < 4; ++call)
    CHECK(Download<float>(d, *outs[call], n) == std::vector<float>(n, 1.0f + call));
  CHECK(Stats(d).kernel_node_updates == s1.kernel_node_updates);
  // Stream mode (one-shot work, profiling) stages uniform slots the same way.
  auto scb = *CreateCommandBuffer(d, CommandBufferMode::kStream);
  REQUIRE(scb->Dispatch(exe, 0, {1, 1, 1},
                        {BufferRef::Slot(0), BufferRef::Slot(1), BufferRef::Slot(2)}, {n, 64})
              .ok());
  REQUIRE(scb->Finalize().ok());
  for (int call = 0; call < 2; ++call) {
    auto u = *d.AllocateBuffer(n * 4, kMemoryHostVisible | kMemoryUniform);
    std::vector<float> v(n, float(100 + call));
    std::memcpy(u->host_data(), v.data(), n * 4);
    REQUIRE(d.QueueExecute({}, scb, {}, {BufferRef::Whole(a), BufferRef::Whole(u), BufferRef::Whole(out)}).ok());
    std::vector<float> got(n, -1.0f);
    REQUIRE(d.ReadBufferAfterPendingWork(*out, 0, got.data(), n * 4).ok());
    CHECK(got == std::vector<float>(n, 101.0f + call));
  }
}

// A region's packed parameter lists: one uniform slot, each dispatch bound at its list's byte
// offset (dispatch_slots_at). Graph and stream command buffers read their own ranges of the one
// shadow; a table whose slot ends before a binding's offset is refused naming both.
TEST_CASE("cuda/bindings_at_offsets_into_one_uniform_slot_read_their_own_ranges") {
  auto dev = OpenOrSkip();
  if (!dev) return;
  Device& d = **dev;
  auto exe = Load(d, CubinView({"add_f32"}));
  const uint32_t n = 64;
  const uint64_t second = 512;  // the second list's offset (a multiple of kBindingAlignment)
  auto record = [&](CommandBufferMode mode) {
    auto cb = *CreateCommandBuffer(d, mode);
    BufferRef at0 = BufferRef::Slot(1), at1 = BufferRef::Slot(1);
    at1.offset = second;
    REQUIRE(cb->Dispatch(exe, 0, {1, 1, 1}, {BufferRef::Slot(0), at0, BufferRef::Slot(2)}, {n, 64}).ok());
    REQUIRE(cb->Dispatch(exe, 0, {1, 1, 1}, {BufferRef::Slot(0), at1, BufferRef::Slot(3)}, {n, 64}).ok());
    REQUIRE(cb->Finalize().ok());
    return cb;
  };
  auto a = Alloc(d, n * 4), out0 = Alloc(d, n * 4), out1 = Alloc(d, n * 4);
  Upload(d, *a, std::vector<float>(n, 1.0f));
  auto packed = [&](float first, float other) {
    auto u = *d.AllocateBuffer(second + n * 4, kMemoryHostVisible | kMemoryUniform);
    std::vector<float> v(second / 4 + n, -1000.0f);
    std::fill(v.begin(), v.begin() + n, first);
    std::fill(v.begin() + second / 4, v.end(), other);
    std::memcpy(u->host_data(), v.data(), v.size() * 4);
    return u;
  };
  for (CommandBufferMode mode : {CommandBufferMode::kGraph, CommandBufferMode::kStream}) {
    INFO((mode == CommandBufferMode::kGraph ? "graph" : "stream"));
    auto cb = record(mode);
    CudaStats s0 = Stats(d);
    for (int call = 0; call < 3; ++call) {
      auto u = packed(10.0f * call, 100.0f * call);
      Run(d, cb, {BufferRef::Whole(a), BufferRef::Whole(u), BufferRef::Whole(out0), BufferRef::Whole(out1)});
      CHECK(Download<float>(d, *out0, n) == std::vector<float>(n, 1.0f + 10.0f * call));
      CHECK(Download<float>(d, *out1, n) == std::vector<float>(n, 1.0f + 100.0f * call));
    }
    if (mode == CommandBufferMode::kGraph) {
      CudaStats s1 = Stats(d);
      CHECK(s1.kernel_node_updates == s0.kernel_node_updates + 2);  // the first launch only
      CHECK(s1.graph_launches == s0.graph_launches + 3);
    }
    // The slot's range ends at the second list's offset: refused before anything runs.
    auto u = packed(1.0f, 2.0f);
    auto sem = *d.CreateSemaphore(0);
    Status s = d.QueueExecute({}, cb, {{sem, 1}},
                              {BufferRef::Whole(a), BufferRef::Range(u, 0, second),
                               BufferRef::Whole(out0), BufferRef::Whole(out1)});
    if (s.ok()) s = sem->Wait(1, 30s);
    INFO(s.ToString());
    REQUIRE(!s.ok());
    CHECK(s.message().find("dispatch of 'add_f32': a binding at byte offset 512 into binding "
                           "table slot 1 lies outside its 512-byte range") != std::string::npos);
    (void)d.WaitIdle();  // a failure not yet reported goes to the next WaitIdle; then usable again
    auto good = packed(3.0f, 4.0f);
    Run(d, cb, {BufferRef::Whole(a), BufferRef::Whole(good), BufferRef::Whole(out0), BufferRef::Whole(out1)});
    CHECK(Download<float>(d, *out1, n) == std::vector<float>(n, 5.0f));
  }
}

TEST_CASE("cuda/indirect_counts_in_uniform_slots_update_graph_nodes_without_stream_launches") {
  auto dev = OpenOrSkip();
  if (!dev) return;
  Device& d = **dev;
  auto exe = Load(d, CubinView({"add_f32"}));
  const uint32_t n = 128, tile = 32;
  auto cb = *d.CreateCommandBuffer();
  BufferRef count_slot = BufferRef::Slot(3);
  count_slot.offset = 16;
  REQUIRE(cb->DispatchIndirect(exe, 0, count_slot,
                               {BufferRef::Slot(0), BufferRef::Slot(1), BufferRef::Slot(2)}, {n, tile})
              .ok());
  REQUIRE(cb->Finalize().ok());
  REQUIRE(DescribeGraph(*cb)->nodes == 1);
  auto a = Alloc(d, n * 4), b = Alloc(d, n * 4), out = Alloc(d, n * 4);
  std::vector<float> ha(n), hb(n, 0.5f);
  for (uint32_t i = 0; i < n; ++i) ha[i] = float(i);
  Upload(d, *a, ha);
  Upload(d, *b, hb);
  // A new uniform count buffer per submission, like a compiled program's parameter buffer;
  // counts only grow, so the output's prefix shows what the last launch covered.
  auto run = [&](uint32_t groups, uint32_t memory_types) {
    auto c = d.AllocateBuffer(64, memory_types);
    REQUIRE(c.ok());
    std::vector<uint32_t> words = {9, 9, 9, 9, groups, 1, 1};
    if ((*c)->host_data()) {
      std::memcpy((*c)->host_data(), words.data(), words.size() * 4);
    } else {
      Upload(d, **c, words);
    }
    Run(d, cb, {BufferRef::Whole(a), BufferRef::Whole(b), BufferRef::Whole(out), BufferRef::Whole(*c)});
    auto got = Download<float>(d, *out, n);
    for (uint32_t i = 0; i < n; ++i) {
      INFO("element " << i << ", " << groups << " workgroups");
      REQUIRE(got[i] == (i < groups * tile ? ha[i] + hb[i] : 0.0f));
    }
  };
  const uint32_t uniform = kMemoryHostVisible | kMemoryUniform;
  CudaStats s0 = Stats(d);
  run(1, uniform);  // instantiation; the slot pointers: one update
  run(1, uniform);  // same pointers (the uniform slot's shadow), same grid: none
  run(2, uniform);  // new grid: one update
  run(4, uniform);  // one update
  CudaStats s1 = Stats(d);
  CHECK(s1.graph_instantiations == s0.graph_instantiations + 1);
  CHECK(s1.graph_launches == s0.graph_launches + 4);
  CHECK(s1.kernel_node_updates == s0.kernel_node_updates + 3);
  CHECK(s1.stream_launches == s0.stream_launches);
  // A count in device memory is known only to the GPU: that submission runs as stream
  // launches with one readback; the graph is then brought up to date again.
  run(4, kMemoryDeviceLocal);
  CudaStats s2 = Stats(d);
  CHECK(s2.stream_launches == s1.stream_launches + 1);
  CHECK(s2.graph_launches == s1.graph_launches);
  run(4, uniform);
  CudaStats s3 = Stats(d);
  CHECK(s3.graph_launches == s2.graph_launches + 1);
  CHECK(s3.graph_instantiations == s1.graph_instantiations);
}

TEST_CASE("cuda/second_call_costs_one_launch_one_synchronization") {
  auto dev = OpenOrSkip();
  if (!dev) return;
  Device& d = **dev;
  auto exe = Load(d, CubinView({"add_f32"}));
  auto cb = *d.CreateCommandBuffer();
  REQUIRE(cb->Dispatch(exe, 0, {1, 1, 1},
                       {BufferRef::Slot(0), BufferRef::Slot(1), BufferRef::Slot(2)}, {64, 64})
              .ok());
  REQUIRE(cb->Finalize().ok());
  auto a = Alloc(d, 256), b = Alloc(d, 256), out = Alloc(d, 256);
  Upload(d, *a, std::vector<float>(64, 1.5f));
  Upload(d, *b, std::vector<float>(64, 2.0f));
  std::vector<BufferRef> table = {BufferRef::Whole(a), BufferRef::Whole(b), BufferRef::Whole(out)};
  auto call = [&] {  // what one call of a compiled program does: submit, read the result
    auto sem = *d.CreateSemaphore(0);
    REQUIRE(d.QueueExecute({}, cb, {{sem, 1}}, table).ok());
    std::vector<float> v(64, -1.0f);
    Status st = d.ReadBufferAfterPendingWork(*out, 0, v.data(), v.size() * sizeof(float));
    INFO(st.ToString());
    REQUIRE(st.ok());
    REQUIRE(*sem->Query() == 1);  // the read covered the submission
    REQUIRE(v == std::vector<float>(64, 3.5f));
  };
  call();
  CudaStats before = Stats(d);
  uint64_t waits = d.stats().host_waits;
  call();
  CudaStats after = Stats(d);
  std::printf("second call: %llu module loads, %llu graph instantiations, %llu graph launches, "
              "%llu node updates, %llu host waits, %llu host synchronizations (incl. the read)\n",
              (unsigned long long)(after.module_loads - before.module_loads),
              (unsigned long long)(after.graph_instantiations - before.graph_instantiations),
              (unsigned long long)(after.graph_launches - before.graph_launches),
              (unsigned long long)(after.kernel_node_updates - before.kernel_node_updates),
              (unsigned long long)(d.stats().host_waits - waits),
              (unsigned long long)(after.host_synchronizations - before.host_synchronizations));
  REQUIRE(after.module_loads == before.module_loads);
  REQUIRE(after.graph_instantiations == before.graph_instantiations);
  REQUIRE(after.graph_launches == before.graph_launches + 1);
  REQUIRE(after.kernel_node_updates == before.kernel_node_updates);
  REQUIRE(d.stats().host_waits == waits + 1);
  REQUIRE(after.host_synchronizations == before.host_synchronizations + 1);
}

// A host loop's flag read: the buffer's last user finished, a long dispatch that does not
// use it is still running, and the read comes back without waiting for that dispatch.
TEST_CASE("cuda/read_of_a_buffer_no_later_submission_uses_runs_beside_them") {
  auto dev = OpenOrSkip();
  if (!dev) return;
  Device& d = **dev;
  auto exe = Load(d, CubinView({"spin_us"}));
  auto flag = Alloc(d, 64), out = Alloc(d, 64);
  auto fill = *d.CreateCommandBuffer();
  REQUIRE(fill->FillBuffer(flag, 0, 64, 5, 4).ok());
  REQUIRE(fill->Finalize().ok());
  auto spin = *d.CreateCommandBuffer();
  REQUIRE(spin->Dispatch(exe, 0, {1, 1, 1}, {BufferRef::Whole(out)}, {300000}).ok());  // 300 ms
  REQUIRE(spin->Finalize().ok());
  auto spun = *d.CreateSemaphore(0);
  REQUIRE(d.QueueExecute({}, fill, {}).ok());
  REQUIRE(d.QueueExecute({}, spin, {{spun, 1}}).ok());
  const DeviceStats before = d.stats();
  uint32_t v = 0;
  REQUIRE(d.ReadBufferAfterPendingWork(*flag, 8, &v, sizeof(v)).ok());
  CHECK(v == 5);
  CHECK(*spun->Query() == 0);  // the read did not wait for the spin
  const DeviceStats ahead = d.stats();
  CHECK(ahead.reads_ahead_of_queue == before.reads_ahead_of_queue + 1);
  CHECK(ahead.queue_drains == before.queue_drains);
  // The spin is the last user of `out`: its read drains the queue.
  REQUIRE(d.ReadBufferAfterPendingWork(*out, 0, &v, sizeof(v)).ok());
  CHECK(*spun->Query() == 1);
  CHECK(d.stats().queue_drains == ahead.queue_drains + 1);
}

TEST_CASE("cuda/read_after_pending_work_flushes_held_back_submissions") {
  auto dev = OpenOrSkip();
  if (!dev) return;
  Device& d = **dev;
  auto exe = Load(d, CubinView({"spin_us"}));
  auto out = Alloc(d, 64);
  auto spin = *d.CreateCommandBuffer();
  REQUIRE(spin->Dispatch(exe, 0, {1, 1, 1}, {BufferRef::Whole(out)}, {100000}).ok());  // 100 ms
  REQUIRE(spin->Finalize().ok());
  auto fill = *d.CreateCommandBuffer();
  REQUIRE(fill->FillBuffer(out, 0, 4, 9, 4).ok());
  REQUIRE(fill->Finalize().ok());
  auto gate = *d.CreateSemaphore(0);
  auto done = *d.CreateSemaphore(0);
  REQUIRE(d.QueueExecute({}, spin, {}).ok());
  // Held back on the host until `gate` is signalled: the read must come after it.
  REQUIRE(d.QueueExecute({{gate, 1}}, fill, {{done, 1}}).ok());
  auto t0 = std::chrono::steady_clock::now();
  Status signalled;  // Catch2 assertions stay on the test thread
  std::thread signaller([&] {
    std::this_thread::sleep_for(150ms);
    signalled = gate->Signal(1);
  });
  uint32_t v = 0;
  Status st = d.ReadBufferAfterPendingWork(*out, 0, &v, sizeof(v));
  signaller.join();
  REQUIRE(signalled.ok());
  INFO(st.ToString());
  REQUIRE(st.ok());
  REQUIRE(std::chrono::steady_clock::now() - t0 >= 140ms);
  REQUIRE(v == 9);
  REQUIRE(*done->Query() == 1);
  // Range errors are reported before any waiting.
  REQUIRE(d.ReadBufferAfterPendingWork(*out, 60, &v, 8).code() == StatusCode::kOutOfRange);
}

TEST_CASE("cuda/independent_dispatches_run_concurrently") {
  auto dev = OpenOrSkip();
  if (!dev) return;
  Device& d = **dev;
  auto exe = Load(d, CubinView({"rendezvous"}));
  const uint32_t timeout_us = 200000;
  {
    // No barrier: no edge, both kernels are resident together and see each other.
    auto flags = Alloc(d, 64);
    auto cb = *d.CreateCommandBuffer();
    REQUIRE(cb->Dispatch(exe, 0, {1, 1, 1}, {BufferRef::Whole(flags)}, {0, 1, timeout_us}).ok());
    REQUIRE(cb->Dispatch(exe, 0, {1, 1, 1}, {BufferRef::Whole(flags)}, {1, 0, timeout_us}).ok());
    REQUIRE(cb->Finalize().ok());
    REQUIRE(DescribeGraph(*cb)->edges == 0);
    Run(d, cb);
    auto f = Download<uint32_t>(d, *flags, 4);
    REQUIRE(f == std::vector<uint32_t>{1, 1, 1, 1});
  }
  {
    // A barrier: an edge, the first gives up waiting before the second starts.
    auto flags = Alloc(d, 64);
    auto cb = *d.CreateCommandBuffer();
    REQUIRE(cb->Dispatch(exe, 0, {1, 1, 1}, {BufferRef::Whole(flags)}, {0, 1, 2000}).ok());
    REQUIRE(cb->Barrier().ok());
    REQUIRE(cb->Dispatch(exe, 0, {1, 1, 1}, {BufferRef::Whole(flags)}, {1, 0, 2000}).ok());
    REQUIRE(cb->Finalize().ok());
    REQUIRE(DescribeGraph(*cb)->edges == 1);
    Run(d, cb);
    REQUIRE(Download<uint32_t>(d, *flags, 4) == std::vector<uint32_t>{1, 1, 2, 1});
  }
  {
    // 3 | barrier | 3: joined through one empty node (3 + 3 edges, not 9).
    auto x = Alloc(d, 64);
    auto affine = Load(d, CubinView({"affine_i32"}));
    auto cb = *d.CreateCommandBuffer();
    for (int i = 0; i < 3; ++i) REQUIRE(cb->Dispatch(affine, 0, {1, 1, 1}, {BufferRef::Range(x, 64 * 0, 64)}, {1, 1, 1}).ok());
    REQUIRE(cb->Barrier().ok());
    REQUIRE(cb->Barrier().ok());  // consecutive barriers add nothing
    for (int i = 0; i < 3; ++i) REQUIRE(cb->Dispatch(affine, 0, {1, 1, 1}, {BufferRef::Whole(x)}, {1, 2, 0}).ok());
    REQUIRE(cb->Finalize().ok());
    auto info = DescribeGraph(*cb);
    REQUIRE(info->nodes == 7);
    REQUIRE(info->edges == 6);
  }
}

// Kernels whose module states their writes get graph edges from ranges (hal/command_ranges.h
// OrderCommands): bench/schedule_waves' 8 chains of 4 steps become 8 branches of 3 edges,
// recorded as waves or serial alike; without the statement a barrier joins everything before
// it. A table whose slots alias what the edges assumed apart runs in stream order.
TEST_CASE("cuda/graph_edges_follow_ranges") {
  auto dev = OpenOrSkip();
  if (!dev) return;
  Device& d = **dev;
  const uint32_t n = 1024, chains = 8, steps = 4;
  // Chain c's step s: slot(c, s + 1) = slot(c, s) + inc (a direct buffer every step reads).
  auto slot = [&](uint32_t c, uint32_t s) { return c * (steps + 1) + s; };
  auto inc = Alloc(d, n * 4);
  Upload(d, *inc, std::vector<float>(n, 1.0f));
  auto record = [&](const vm::Ref<Executable>& exe, bool serial) {
    auto cb = *d.CreateCommandBuffer();
    for (uint32_t s = 0; s < steps; ++s) {
      for (uint32_t c = 0; c < chains; ++c) {
        if ((s > 0 || c > 0) && (serial || c == 0)) REQUIRE(cb->Barrier().ok());
        REQUIRE(cb->Dispatch(exe, 0, {n / 256, 1, 1},
                             {BufferRef::Slot(slot(c, s)), BufferRef::Whole(inc),
                              BufferRef::Slot(slot(c, s + 1))},
                             {n, 256})
                    .ok());
      }
    }
    REQUIRE(cb->Finalize().ok());
    return cb;
  };
  vm::ExecutableView plain = CubinView({"add_f32"});
  vm::ExecutableView stated = plain;
  stated.entry_written_bindings = {uint64_t{1} << 2};  // writes `out` only
  std::vector<vm::Ref<Buffer>> b;
  for (uint32_t i = 0; i < chains * (steps + 1); ++i) b.push_back(Alloc(d, n * 4));
  auto table = [&](uint32_t aliased_slot, uint32_t buffer) {
    std::vector<BufferRef> t;
    for (uint32_t i = 0; i < b.size(); ++i) t.push_back(BufferRef::Whole(b[i == aliased_slot ? buffer : i]));
    return t;
  };
  const std::vector<BufferRef> distinct = table(~0u, 0);
  auto reset = [&] {
    for (uint32_t c = 0; c < chains; ++c) {
      Upload(d, *b[slot(c, 0)], std::vector<float>(n, float(c)));
      for (uint32_t s = 1; s <= steps; ++s) Upload(d, *b[slot(c, s)], std::vector<float>(n, -1000.0f));
    }
  };
  auto finals = [&] {
    std::vector<float> f;
    for (uint32_t c = 0; c < chains; ++c) {
      std::vector<float> v = Download<float>(d, *b[slot(c, steps)], n);
      for (float x : v) REQUIRE(x == v[0]);  // every element alike
      f.push_back(v[0]);
    }
    return f;
  };
  std::vector<float> expected;
  for (uint32_t c = 0; c < chains; ++c) expected.push_back(float(c + steps));
  struct Case {
    const char* name;
    bool stated, serial;
    size_t nodes, edges;
  };
  const Case cases[] = {
      {"stated, waves", true, false, 32, 24},   // 8 branches: each step after its chain's last
      {"stated, serial", true, true, 32, 24},   // the same: the barriers hide no other order
      {"plain, waves", false, false, 35, 48},   // 3 barriers joined through 3 empty nodes
      {"plain, serial", false, true, 32, 31}};  // one chain
  for (const Case& k : cases) {
    INFO(k.name);
    CudaStats s0 = Stats(d);
    auto cb = record(Load(d, k.stated ? stated : plain), k.serial);
    CudaStats s1 = Stats(d);
    auto info = DescribeGraph(*cb);
    REQUIRE(info.ok());
    CHECK(info->nodes == k.nodes);
    CHECK(info->edges == k.edges);
    CHECK(s1.graph_nodes - s0.graph_nodes == k.nodes);
    CHECK(s1.graph_edges - s0.graph_edges == k.edges);
    reset();
    Run(d, cb, distinct);
    CudaStats s2 = Stats(d);
    CHECK(s2.graph_launches == s1.graph_launches + 1);
    CHECK(s2.stream_launches == s1.stream_launches);
    CHECK(finals() == expected);
    if (!k.stated) continue;
    // Chain 1 reads, at step 0, the buffer chain 0 writes at step 0: an order the edges do not
    // have. The submission runs as stream launches, in recording order (chain 0 first).
    reset();
    Run(d, cb, table(slot(1, 0), slot(0, 1)));
    CudaStats s3 = Stats(d);
    CHECK(s3.graph_launches == s2.graph_launches);
    CHECK(s3.stream_launches == s2.stream_launches + chains * steps);
    std::vector<float> aliased = expected;
    aliased[1] = 1.0f + steps;  // chain 0's step 0 (0 + 1), then 4 steps
    CHECK(finals() == aliased);
    // Distinct again: one graph launch, every node brought up to date.
    reset();
    Run(d, cb, distinct);
    CudaStats s4 = Stats(d);
    CHECK(s4.graph_launches == s3.graph_launches + 1);
    CHECK(s4.stream_launches == s3.stream_launches);
    CHECK(finals() == expected);
  }
}

TEST_CASE("cuda/graph_edges_setting_names_the_accepted_values (no GPU needed)") {
  std::string warning;
  CHECK(ParseGraphEdges(nullptr, &warning) == GraphEdges::kRanges);
  CHECK(warning.empty());
  CHECK(ParseGraphEdges("", &warning) == GraphEdges::kRanges);
  CHECK(ParseGraphEdges("ranges", &warning) == GraphEdges::kRanges);
  CHECK(ParseGraphEdges("ranges-recording-order", &warning) == GraphEdges::kRangesRecordingOrder);
  CHECK(ParseGraphEdges("barriers", &warning) == GraphEdges::kBarriers);
  CHECK(warning.empty());
  // A typo is not ignored: the default, and a message naming it and every accepted value.
  CHECK(ParseGraphEdges("barrier", &warning) == GraphEdges::kRanges);
  CHECK(warning ==
        "HEXIR_CUDA_GRAPH_EDGES='barrier' is not a setting (accepted: ranges, "
        "ranges-recording-order, barriers); using ranges");
  ParseGraphEdges("ranges", &warning);
  CHECK(warning.empty());
}

TEST_CASE("cuda/programmatic_launch_setting_names_the_accepted_values (no GPU needed)") {
  std::string warning;
  CHECK(ParseProgrammaticLaunch(nullptr, &warning) == ProgrammaticLaunch::kProgrammatic);
  CHECK(ParseProgrammaticLaunch("", &warning) == ProgrammaticLaunch::kProgrammatic);
  CHECK(ParseProgrammaticLaunch("on", &warning) == ProgrammaticLaunch::kProgrammatic);
  CHECK(ParseProgrammaticLaunch("programmatic", &warning) == ProgrammaticLaunch::kProgrammatic);
  CHECK(ParseProgrammaticLaunch("launch-order", &warning) == ProgrammaticLaunch::kLaunchOrder);
  CHECK(ParseProgrammaticLaunch("off", &warning) == ProgrammaticLaunch::kOff);
  CHECK(warning.empty());
  CHECK(ParseProgrammaticLaunch("0", &warning) == ProgrammaticLaunch::kProgrammatic);
  CHECK(warning ==
        "HEXIR_CUDA_PDL='0' is not a setting (accepted: on, programmatic, launch-order, off); "
        "using programmatic");
}

// Two writers, a barrier, three readers of both (add(y0, y1) -> z_k): by ranges each reader
// follows both writers; one join node makes that 2 + 3 edges instead of 2 x 3, and the results
// are those of the six edges (HEXIR_CUDA_GRAPH_EDGES=ranges-recording-order, no join).
TEST_CASE("cuda/graph_fan_in_between_groups_goes_through_one_join_node") {
  auto dev = OpenOrSkip();
  if (!dev) return;
  Device& d = **dev;
  const uint32_t n = 1000;  // not a multiple of the 256-element tile
  vm::ExecutableView stated = CubinView({"add_f32"});
  stated.entry_written_bindings = {uint64_t{1} << 2};
  auto exe = Load(d, stated);
  auto a0 = Alloc(d, n * 4), a1 = Alloc(d, n * 4), inc = Alloc(d, n * 4);
  auto y0 = Alloc(d, n * 4), y1 = Alloc(d, n * 4);
  std::vector<vm::Ref<Buffer>> z = {Alloc(d, n * 4), Alloc(d, n * 4), Alloc(d, n * 4)};
  std::vector<float> va(n), vb(n), vi(n);
  for (uint32_t i = 0; i < n; ++i) {
    va[i] = float(i % 7);
    vb[i] = float(i % 5) * 0.5f;
    vi[i] = 0.25f;
  }
  Upload(d, *a0, va);
  Upload(d, *a1, vb);
  Upload(d, *inc, vi);
  const uint32_t groups = (n + 255) / 256;
  auto record = [&] {
    auto cb = *d.CreateCommandBuffer();
    REQUIRE(cb->Dispatch(exe, 0, {groups, 1, 1},
                         {BufferRef::Whole(a0), BufferRef::Whole(inc), BufferRef::Whole(y0)}, {n, 256})
                .ok());
    REQUIRE(cb->Dispatch(exe, 0, {groups, 1, 1},
                         {BufferRef::Whole(a1), BufferRef::Whole(inc), BufferRef::Whole(y1)}, {n, 256})
                .ok());
    REQUIRE(cb->Barrier().ok());
    for (const auto& out : z) {
      REQUIRE(cb->Dispatch(exe, 0, {groups, 1, 1},
                           {BufferRef::Whole(y0), BufferRef::Whole(y1), BufferRef::Whole(out)}, {n, 256})
                  .ok());
    }
    REQUIRE(cb->Finalize().ok());
    return cb;
  };
  struct Case {
    const char* setting;
    size_t nodes, edges;
  };
  const Case cases[] = {{"ranges", 6, 5}, {"ranges-recording-order", 5, 6}};
  for (const Case& k : cases) {
    INFO(k.setting);
    setenv("HEXIR_CUDA_GRAPH_EDGES", k.setting, 1);
    CudaStats s0 = Stats(d);
    auto cb = record();
    unsetenv("HEXIR_CUDA_GRAPH_EDGES");
    CudaStats s1 = Stats(d);
    auto info = DescribeGraph(*cb);
    REQUIRE(info.ok());
    CHECK(info->nodes == k.nodes);
    CHECK(info->edges == k.edges);
    CHECK(s1.graph_nodes - s0.graph_nodes == k.nodes);
    CHECK(s1.graph_edges - s0.graph_edges == k.edges);
    for (const auto& out : z) Upload(d, *out, std::vector<float>(n, -1.0f));
    Run(d, cb);
    CHECK(Stats(d).graph_launches == s1.graph_launches + 1);
    for (const auto& out : z) {
      std::vector<float> got = Download<float>(d, *out, n);
      for (uint32_t i = 0; i < n; ++i) {
        INFO("element " << i);
        REQUIRE(got[i] == (va[i] + vi[i]) + (vb[i] + vi[i]));
      }
    }
  }
}

TEST_CASE("cuda/out_of_memory_is_reported_and_survived") {
  auto dev = OpenOrSkip();
  if (!dev) return;
  Device& d = **dev;
  auto huge = d.AllocateBuffer(uint64_t{1} << 40);  // 1 TiB: more than any GPU has
  REQUIRE(huge.status().code() == StatusCode::kResourceExhausted);
  INFO(huge.status().message());
  REQUIRE(huge.status().message().find("cuMemAllocAsync(1099511627776 bytes)") != std::string::npos);
  REQUIRE(huge.status().message().find("CUDA_ERROR_OUT_OF_MEMORY") != std::string::npos);
  std::printf("out of memory reported as: %s\n", huge.status().ToString().c_str());
  // The device still works.
  auto exe = Load(d, CubinView({"affine_i32"}));
  auto x = Alloc(d, 16);
  Upload(d, *x, std::vector<int32_t>{1, 2, 3, 4});
  auto cb = *d.CreateCommandBuffer();
  REQUIRE(cb->Dispatch(exe, 0, {4, 1, 1}, {BufferRef::Whole(x)}, {4, 10, 0}).ok());
  REQUIRE(cb->Finalize().ok());
  Run(d, cb);
  REQUIRE(Download<int32_t>(d, *x, 4) == std::vector<int32_t>{10, 20, 30, 40});
}

TEST_CASE("cuda/stream_command_buffer") {
  auto dev = OpenOrSkip();
  if (!dev) return;
  Device& d = **dev;
  auto exe = Load(d, CubinView({"affine_i32"}));
  auto x = Alloc(d, 64), y = Alloc(d, 64);
  Upload(d, *x, std::vector<int32_t>{5, 6, 7, 8});
  auto cb = CreateCommandBuffer(d, CommandBufferMode::kStream);
  REQUIRE(cb.ok());
  REQUIRE((*cb)->Dispatch(exe, 0, {4, 1, 1}, {BufferRef::Slot(0)}, {4, 3, 1}).ok());
  REQUIRE((*cb)->Barrier().ok());
  REQUIRE((*cb)->CopyBuffer(x, 0, y, 0, 16).ok());
  REQUIRE((*cb)->CopyBuffer(x, 0, x, 4, 12).ok());  // overlapping: a memmove
  REQUIRE((*cb)->Finalize().ok());
  REQUIRE(DescribeGraph(**cb).status().code() == StatusCode::kFailedPrecondition);
  CudaStats s0 = Stats(d);
  Run(d, *cb, {BufferRef::Whole(x)});
  CudaStats s1 = Stats(d);
  REQUIRE(s1.graph_instantiations == s0.graph_instantiations);
  REQUIRE(s1.graph_launches == s0.graph_launches);
  REQUIRE(s1.stream_launches == s0.stream_launches + 1);
  REQUIRE(Download<int32_t>(d, *y, 4) == std::vector<int32_t>{16, 19, 22, 25});
  REQUIRE(Download<int32_t>(d, *x, 4) == std::vector<int32_t>{16, 16, 19, 22});
  // The same overlapping copy as a graph.
  Upload(d, *x, std::vector<int32_t>{1, 2, 3, 4});
  auto g = *d.CreateCommandBuffer();
  REQUIRE(g->CopyBuffer(x, 0, x, 4, 12).ok());
  REQUIRE(g->Finalize().ok());
  Run(d, g);
  REQUIRE(Download<int32_t>(d, *x, 4) == std::vector<int32_t>{1, 1, 2, 3});
}

TEST_CASE("cuda/ptx_and_fallback") {
  auto dev = OpenOrSkip();
  if (!dev) return;
  Device& d = **dev;
  CudaStats s0 = Stats(d);
  auto ptx = Load(d, testing::PtxView({"affine_i32"}));
  REQUIRE(ptx->format() == "cuda-ptx");
  // A cubin the driver rejects (built for sm_100), with PTX attached: loads from the PTX.
  auto fallback = Load(d, testing::ForeignCubinView({"affine_i32"}, /*with_ptx=*/true));
  REQUIRE(Stats(d).module_loads == s0.module_loads + 3);  // ptx, foreign cubin, its ptx
  // Without PTX the cubin error is reported with the CUDA error name and the operation.
  auto failed = d.CreateExecutable(testing::ForeignCubinView({"affine_i32"}, false));
  INFO(failed.status().ToString());
  REQUIRE(failed.status().code() == StatusCode::kInvalidArgument);
  REQUIRE(failed.status().message().find("cuModuleLoadData(cubin") != std::string::npos);
  REQUIRE(failed.status().message().find("CUDA_ERROR_") != std::string::npos);
  std::printf("foreign cubin without PTX reported as: %s\n", failed.status().ToString().c_str());
  const uint8_t not_elf[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  vm::ExecutableView junk = CubinView({"affine_i32"});
  junk.data = not_elf;
  junk.size = sizeof(not_elf);
  REQUIRE(d.CreateExecutable(junk).status().message().find("not a cubin") != std::string::npos);
  for (auto& exe : {ptx, fallback}) {
    auto x = Alloc(d, 16);
    Upload(d, *x, std::vector<int32_t>{1, 2, 3, 4});
    auto cb = *d.CreateCommandBuffer();
    REQUIRE(cb->Dispatch(exe, 0, {4, 1, 1}, {BufferRef::Whole(x)}, {4, 2, 1}).ok());
    REQUIRE(cb->Finalize().ok());
    Run(d, cb);
    REQUIRE(Download<int32_t>(d, *x, 4) == std::vector<int32_t>{3, 5, 7, 9});
  }
  vm::ExecutableView wrong = CubinView({"affine_i32"});
  wrong.format = "cpu-elf-x86_64";
  auto wrong_format = d.CreateExecutable(wrong);
  REQUIRE(wrong_format.status().code() == StatusCode::kInvalidArgument);
  REQUIRE(wrong_format.status().message().find("'cpu-elf-x86_64' is not supported") !=
          std::string::npos);
  // Any cubin chip name is accepted; the driver decides whether the image fits the GPU.
  vm::ExecutableView other_chip = CubinView({"affine_i32"});
  other_chip.format = "cuda-cubin-sm_100";
  auto foreign = d.CreateExecutable(other_chip);
  INFO(foreign.status().ToString());
  REQUIRE(foreign.ok());
  vm::ExecutableView bad_block = CubinView({"affine_i32"});
  bad_block.attrs = {{"cuda.block_size.affine_i32", "64,x,1"}};
  auto bb = d.CreateExecutable(bad_block);
  REQUIRE(bb.status().code() == StatusCode::kInvalidArgument);
  REQUIRE(bb.status().message().find("cuda.block_size.affine_i32") != std::string::npos);
  // Dynamic shared memory: a malformed count, and more than any block may have, are refused
  // naming the entry; 64 KiB (above the 48 KiB default) loads and runs.
  vm::ExecutableView bad_shared = CubinView({"affine_i32"});
  bad_shared.attrs = {{"cuda.shared_bytes.affine_i32", "64k"}};
  auto bs = d.CreateExecutable(bad_shared);
  REQUIRE(bs.status().code() == StatusCode::kInvalidArgument);
  REQUIRE(bs.status().message().find("cuda.shared_bytes.affine_i32") != std::string::npos);
  vm::ExecutableView huge_shared = CubinView({"affine_i32"});
  huge_shared.attrs = {{"cuda.shared_bytes.affine_i32", "4194304"}};
  auto hs = d.CreateExecutable(huge_shared);
  REQUIRE(!hs.ok());
  REQUIRE(hs.status().message().find("cuFuncSetAttribute('affine_i32', 4194304 bytes") != std::string::npos);
  vm::ExecutableView big_shared = CubinView({"affine_i32"});
  big_shared.attrs = {{"cuda.shared_bytes.affine_i32", "65536"}};
  auto big = Load(d, big_shared);
  auto y = Alloc(d, 16);
  Upload(d, *y, std::vector<int32_t>{1, 2, 3, 4});
  auto cb = *d.CreateCommandBuffer();
  REQUIRE(cb->Dispatch(big, 0, {4, 1, 1}, {BufferRef::Whole(y)}, {4, 2, 1}).ok());
  REQUIRE(cb->Finalize().ok());
  Run(d, cb);
  REQUIRE(Download<int32_t>(d, *y, 4) == std::vector<int32_t>{3, 5, 7, 9});
}

TEST_CASE("cuda/queue_execute_is_asynchronous") {
  auto dev = OpenOrSkip();
  if (!dev) return;
  Device& d = **dev;
  auto exe = Load(d, CubinView({"spin_us"}));
  auto out = Alloc(d, 64);
  auto cb = *d.CreateCommandBuffer();
  REQUIRE(cb->Dispatch(exe, 0, {1, 1, 1}, {BufferRef::Whole(out)}, {300000}).ok());  // 300 ms
  REQUIRE(cb->Finalize().ok());
  auto sem = *d.CreateSemaphore(0);
  uint64_t waits = d.stats().host_waits;
  auto t0 = std::chrono::steady_clock::now();
  REQUIRE(d.QueueExecute({}, cb, {{sem, 1}}).ok());
  auto submit = std::chrono::steady_clock::now() - t0;
  REQUIRE(submit < 100ms);
  REQUIRE(*sem->Query() == 0);
  REQUIRE(sem->Wait(1, 1ms).code() == StatusCode::kDeadlineExceeded);
  REQUIRE(sem->Wait(1, 30s).ok());
  REQUIRE(std::chrono::steady_clock::now() - t0 >= 250ms);
  REQUIRE(d.stats().host_waits == waits + 2);
  REQUIRE(Download<uint32_t>(d, *out, 1)[0] == 1);
  // A device wait on another submission's signal is satisfied in stream order (no host wait).
  auto cb2 = *d.CreateCommandBuffer();
  REQUIRE(cb2->FillBuffer(out, 0, 4, 9, 4).ok());
  REQUIRE(cb2->Finalize().ok());
  auto sem2 = *d.CreateSemaphore(0);
  REQUIRE(d.QueueExecute({}, cb, {{sem, 2}}).ok());
  REQUIRE(d.QueueExecute({{sem, 2}}, cb2, {{sem2, 1}}).ok());
  REQUIRE(sem2->Wait(1, 30s).ok());
  REQUIRE(*sem->Query() == 2);
  REQUIRE(Download<uint32_t>(d, *out, 1)[0] == 9);
}

TEST_CASE("cuda/small_calls_retire_in_order_whoever_waits") {
  // Submissions are retired (semaphores signalled, errors kept) by the completion thread or
  // by the host wait that gets there first; mixing both must signal every value in order and
  // read every result. 300 calls of a 1-dispatch graph: x[0] += 1, alternating the three
  // ways a host waits for a result.
  auto dev = OpenOrSkip();
  if (!dev) return;
  Device& d = **dev;
  auto exe = Load(d, CubinView({"tiny_inc"}));
  auto counter = Alloc(d, 256);
  auto cb = *d.CreateCommandBuffer();
  REQUIRE(cb->Dispatch(exe, 0, {1, 1, 1}, {BufferRef::Slot(0)}).ok());
  REQUIRE(cb->Finalize().ok());
  auto sem = *d.CreateSemaphore(0);
  std::vector<BufferRef> table = {BufferRef::Whole(counter)};
  DeviceStats before = d.stats();
  for (uint32_t call = 1; call <= 300; ++call) {
    REQUIRE(d.QueueExecute({}, cb, {{sem, call}}, table).ok());
    uint32_t v = 0;
    if (call % 3 == 0) {
      REQUIRE(sem->Wait(call, 30s).ok());
      REQUIRE(d.ReadBuffer(*counter, 0, &v, 4).ok());
    } else if (call % 3 == 1) {
      REQUIRE(d.ReadBufferAfterPendingWork(*counter, 0, &v, 4).ok());
      REQUIRE(*sem->Query() == call);
    } else {
      REQUIRE(d.WaitIdle(30s).ok());
      REQUIRE(*sem->Query() == call);
      REQUIRE(d.ReadBuffer(*counter, 0, &v, 4).ok());
    }
    REQUIRE(v == call);
  }
  // No call waited on a semaphore: nothing was ordered or elided.
  REQUIRE(d.stats().queue_waits == before.queue_waits);
  REQUIRE(d.stats().queue_submissions == before.queue_submissions + 300);
}

TEST_CASE("cuda/interrupted_read_of_running_work_leaves_it_queued") {
  // The read's copy retires like a submission: a deadline ends the wait while a 200 ms kernel
  // runs, the work and the copy complete later, and the staging buffer is not reused before.
  auto dev = OpenOrSkip();
  if (!dev) return;
  Device& d = **dev;
  auto exe = Load(d, CubinView({"spin_us"}));
  auto out = Alloc(d, 64);
  auto spin = *d.CreateCommandBuffer();
  REQUIRE(spin->Dispatch(exe, 0, {1, 1, 1}, {BufferRef::Whole(out)}, {200000}).ok());
  REQUIRE(spin->Finalize().ok());
  auto done = *d.CreateSemaphore(0);
  REQUIRE(d.QueueExecute({}, spin, {{done, 1}}).ok());
  uint32_t v = 0;
  int64_t start = Interrupt::NowNs();
  Status st = d.ReadBufferAfterPendingWork(*out, 0, &v, 4,
                                           Interrupt(start + 30'000'000, nullptr, start));
  int64_t took = Interrupt::NowNs() - start;
  REQUIRE(st.code() == StatusCode::kDeadlineExceeded);
  REQUIRE(took < 150'000'000);
  REQUIRE(*done->Query() == 0);
  auto other = Alloc(d, 64);
  Upload(d, *other, std::vector<uint32_t>{7});  // waits for the pending staging copy first
  REQUIRE(d.ReadBufferAfterPendingWork(*out, 0, &v, 4).ok());
  REQUIRE(v == 1);
  REQUIRE(*done->Query() == 1);
  REQUIRE(Download<uint32_t>(d, *other, 1)[0] == 7);
  REQUIRE(d.WaitIdle(30s).ok());
}

TEST_CASE("cuda/dispatch_abi_checks") {
  auto dev = OpenOrSkip();
  if (!dev) return;
  Device& d = **dev;
  auto exe = Load(d, CubinView({"add_f32", "count_misaligned"}));
  auto buf = Alloc(d, 4096);
  // add_f32 declares (ptr, ptr, ptr, u32, u32): 2 bindings + 2 push constants is a mismatch,
  // even though 5 = 2 + 2 + 1 (the last parameter is not an 8-byte status pointer).
  auto cb = *d.CreateCommandBuffer();
  REQUIRE(cb->Dispatch(exe, 0, {1, 1, 1}, {BufferRef::Whole(buf), BufferRef::Whole(buf)}, {1, 1})
              .ok());
  Status fin = cb->Finalize();
  INFO(fin.ToString());
  REQUIRE(fin.code() == StatusCode::kInvalidArgument);
  REQUIRE(fin.message().find("declares 5 parameter(s) of sizes [8,8,8,4,4]") != std::string::npos);
  // 3 bindings + 1 push constant: a pointer where a push constant belongs.
  auto cb1 = *d.CreateCommandBuffer();
  REQUIRE(cb1->Dispatch(exe, 0, {1, 1, 1},
                        {BufferRef::Whole(buf), BufferRef::Whole(buf), BufferRef::Whole(buf),
                         BufferRef::Whole(buf)},
                        {1})
              .ok());
  REQUIRE(cb1->Finalize().code() == StatusCode::kInvalidArgument);
  // Offsets keep 64-byte alignment of the binding pointers.
  auto cb2 = *d.CreateCommandBuffer();
  REQUIRE(cb2->Dispatch(exe, 1, {1, 1, 1},
                        {BufferRef::Range(buf, 0, 64), BufferRef::Range(buf, 64, 64),
                         BufferRef::Range(buf, 1024, 128)})
              .ok());
  REQUIRE(cb2->Finalize().ok());
  REQUIRE(d.WriteBuffer(*buf, 0, "\xff\xff\xff\xff", 4).ok());
  Run(d, cb2);
  REQUIRE(Download<uint32_t>(d, *buf, 1)[0] == 0);
  // Zero workgroups: nothing runs, no node.
  auto cb4 = *d.CreateCommandBuffer();
  REQUIRE(cb4->Dispatch(exe, 1, {0, 1, 1}, {BufferRef::Whole(buf), BufferRef::Whole(buf),
                                            BufferRef::Whole(buf)})
              .ok());
  REQUIRE(cb4->Finalize().ok());
  REQUIRE(DescribeGraph(*cb4)->nodes == 0);
  Run(d, cb4);
}

TEST_CASE("cuda/host_visible_buffers") {
  auto dev = OpenOrSkip();
  if (!dev) return;
  Device& d = **dev;
  auto exe = Load(d, CubinView({"affine_i32"}));
  auto host = Alloc(d, 64, kMemoryHostVisible);
  REQUIRE(host->host_data() != nullptr);
  REQUIRE(host->memory_types() == kMemoryHostVisible);
  auto dev_buf = Alloc(d, 64);
  REQUIRE(dev_buf->host_data() == nullptr);
  REQUIRE(dev_buf->memory_types() == kMemoryDeviceLocal);
  int32_t init[4] = {1, -1, 7, 0};
  std::memcpy(host->host_data(), init, 16);
  auto cb = *d.CreateCommandBuffer();
  REQUIRE(cb->Dispatch(exe, 0, {4, 1, 1}, {BufferRef::Whole(host)}, {4, 3, 0}).ok());
  REQUIRE(cb->Finalize().ok());
  Run(d, cb);
  int32_t got[4];
  std::memcpy(got, host->host_data(), 16);
  REQUIRE(got[0] == 3);
  REQUIRE(got[1] == -3);
  REQUIRE(got[2] == 21);
  REQUIRE(got[3] == 0);
  // Large transfers go through staging in chunks.
  const size_t n = (40u << 20) / 4;
  auto big = Alloc(d, n * 4);
  std::vector<uint32_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint32_t>(i * 2654435761u);
  Upload(d, *big, v);
  REQUIRE(Download<uint32_t>(d, *big, n) == v);
}

// The DLPack import path (python/): a framework's device memory used in place by a dispatch,
// its owner released only after that work, and memory that is not this GPU's refused by name.
TEST_CASE("cuda/external_device_memory_is_used_in_place_and_released_after_its_work") {
  auto dev = OpenOrSkip();
  if (!dev) return;
  Device& d = **dev;
  auto exe = Load(d, CubinView({"affine_i32"}));
  auto owner = Alloc(d, 16);  // stands in for a torch tensor's memory
  Upload(d, *owner, std::vector<int32_t>{1, -1, 7, 0});
  REQUIRE(d.WaitIdle().ok());
  const uint64_t live = d.stats().buffers_live;
  int releases = 0;
  {
    auto wrapped = d.WrapExternalMemory(owner->device_address(), 16, [&] { ++releases; });
    INFO(wrapped.status().ToString());
    REQUIRE(wrapped.ok());
    REQUIRE((*wrapped)->device_address() == owner->device_address());
    REQUIRE(d.stats().buffers_live == live);
    auto cb = *d.CreateCommandBuffer();
    REQUIRE(cb->Dispatch(exe, 0, {4, 1, 1}, {BufferRef::Whole(*wrapped)}, {4, 3, 0}).ok());
    REQUIRE(cb->Finalize().ok());
    Run(d, cb);
  }
  REQUIRE(d.WaitIdle().ok());
  REQUIRE(releases == 1);
  REQUIRE(Download<int32_t>(d, *owner, 4) == std::vector<int32_t>{3, -3, 21, 0});
  REQUIRE(d.NativeQueueHandle() != 0);

  int32_t host_value = 0;
  auto refused = d.WrapExternalMemory(reinterpret_cast<uintptr_t>(&host_value), 4, [&] { ++releases; });
  REQUIRE_FALSE(refused.ok());
  INFO(refused.status().ToString());
  REQUIRE(refused.status().message().find("not memory of a CUDA device") != std::string::npos);
  REQUIRE(releases == 1);
}

}  // namespace
}  // namespace hexir::hal::cuda

namespace hexir::hal::cuda {
namespace {

TEST_CASE("cuda/device_destruction") {
  auto dev = OpenOrSkip();
  if (!dev) return;
  vm::Ref<Buffer> survivor;
  vm::Ref<Semaphore> gate, done, ran;
  vm::Ref<Executable> exe;
  {
    vm::Ref<Device> d = *dev;
    dev.reset();
    exe = Load(*d, CubinView({"spin_us"}));
    survivor = Alloc(*d, 64);
    gate = *d->CreateSemaphore(0);
    done = *d->CreateSemaphore(0);
    ran = *d->CreateSemaphore(0);
    auto cb = *d->CreateCommandBuffer();
    REQUIRE(cb->Dispatch(exe, 0, {1, 1, 1}, {BufferRef::Whole(survivor)}, {50000}).ok());
    REQUIRE(cb->Finalize().ok());
    REQUIRE(d->QueueExecute({}, cb, {{ran, 1}}).ok());          // on the GPU: drained
    REQUIRE(d->QueueExecute({{gate, 1}}, cb, {{done, 1}}).ok());  // blocked: aborted
  }  // the device is destroyed here; objects it made outlive it
  REQUIRE(ran->Wait(1, 0ns).ok());
  Status s = done->Wait(1, 0ns);
  INFO(s.ToString());
  REQUIRE(s.code() == StatusCode::kAborted);
  REQUIRE(s.message().find("destroyed") != std::string::npos);
  REQUIRE(survivor->byte_size() == 64);
  survivor = vm::Ref<Buffer>();  // freed on the shared stream after the device is gone
  exe = vm::Ref<Executable>();
  auto again = CreateDevice("cuda");  // the GPU is still usable
  REQUIRE(again.ok());
  auto b = (*again)->AllocateBuffer(16);
  REQUIRE(b.ok());
}

}  // namespace
}  // namespace hexir::hal::cuda
