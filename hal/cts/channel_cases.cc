// CTS cases for collectives (hal/channel.h): every kind, f32/f16/i32 where the kind reduces,
// sizes 1, odd and large, recorded into command buffers and checked against a reference
// computed from every rank's inputs (which each rank derives from the rank number). Each case
// runs on a ChannelGroup: the ranks this process drives, each on its own device, whose queue
// threads run the collectives at once while this thread submits, waits and asserts. One
// process alone: a channel of one rank; hal/cts/mpi_cts_test.sh and torchrun_cts_test.sh run
// the same binary as 2 and 4 processes; gloo_cts_test.cc runs in-process groups of 2 and 4.
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <unistd.h>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "hal/cts/cts.h"

namespace hexir::hal::cts {
namespace {

void RequireOk(const Status& s) {
  INFO(s.ToString());
  REQUIRE(s.ok());
}

ChannelGroup GroupOf(Device& d) {
  auto channel = d.CreateChannel();
  RequireOk(channel.status());
  return {{&d}, {*channel}};
}

// The device's group of one, or false after printing the skip marker when the device has no
// collective engine here (Unavailable: CUDA without libnccl.so.2).
bool GroupOrSkip(Device& d, const char* case_name, ChannelGroup* group) {
  auto channel = d.CreateChannel();
  if (channel.status().code() == StatusCode::kUnavailable) {
    std::printf("HEXIR_SKIPPED: cts/%s/%s: %s\n", std::string(d.uri()).c_str(), case_name,
                channel.status().message().c_str());
    return false;
  }
  RequireOk(channel.status());
  *group = {{&d}, {*channel}};
  return true;
}

// Small integers, so that sums and products over 4 ranks are exact in f16 too.
int64_t InputValue(int32_t rank, uint64_t i) { return int64_t((i * 7 + rank * 3) % 5) - 2; }

uint16_t SmallIntToHalf(int64_t v) {
  if (v == 0) return 0;
  uint16_t sign = v < 0 ? 0x8000 : 0;
  uint64_t a = v < 0 ? -v : v;
  int e = 63 - __builtin_clzll(a);
  return sign | uint16_t((e + 15) << 10) | uint16_t(((a << 10) >> e) & 0x3ff);
}

std::vector<uint8_t> Encode(const std::vector<int64_t>& values, ElementType type) {
  std::vector<uint8_t> bytes(values.size() * ElementTypeByteSize(int32_t(type)));
  for (size_t i = 0; i < values.size(); ++i) {
    if (type == ElementType::kF32) {
      float f = float(values[i]);
      std::memcpy(&bytes[i * 4], &f, 4);
    } else if (type == ElementType::kI32) {
      int32_t x = int32_t(values[i]);
      std::memcpy(&bytes[i * 4], &x, 4);
    } else {
      uint16_t h = SmallIntToHalf(values[i]);
      std::memcpy(&bytes[i * 2], &h, 2);
    }
  }
  return bytes;
}

// The values of `bytes` (exact small integers; -0.0 reads as 0, as MPI's products give it).
std::vector<int64_t> Decode(const std::vector<uint8_t>& bytes, ElementType type) {
  const size_t element = ElementTypeByteSize(int32_t(type));
  std::vector<int64_t> values(bytes.size() / element);
  for (size_t i = 0; i < values.size(); ++i) {
    if (type == ElementType::kF32) {
      float f;
      std::memcpy(&f, &bytes[i * 4], 4);
      values[i] = int64_t(f);
    } else if (type == ElementType::kI32) {
      int32_t x;
      std::memcpy(&x, &bytes[i * 4], 4);
      values[i] = x;
    } else {
      uint16_t h;
      std::memcpy(&h, &bytes[i * 2], 2);
      int exponent = (h >> 10) & 0x1f;
      int64_t magnitude = exponent == 0 ? 0 : int64_t((0x400 | (h & 0x3ff))) << exponent >> 25;
      values[i] = (h & 0x8000) ? -magnitude : magnitude;
    }
  }
  return values;
}

int64_t Reduce(ReductionOp op, int64_t a, int64_t b) {
  switch (op) {
    case ReductionOp::kSum: return a + b;
    case ReductionOp::kMax: return std::max(a, b);
    case ReductionOp::kMin: return std::min(a, b);
    case ReductionOp::kProd: return a * b;
  }
  return 0;
}

struct Collective {
  CollectiveKind kind;
  ReductionOp reduction;
  ElementType type;
  uint64_t count;
  int32_t peer;
};

// What one rank runs in a RunGroup step.
struct RankWork {
  Collective c;
  std::vector<uint8_t> send;
  uint64_t recv_size = 0;
};

// Records and submits one collective on every rank of `g` (`work(rank)` says which), then
// waits for all of them and returns each rank's recv bytes, in the group's order.
std::vector<std::vector<uint8_t>> RunGroup(const ChannelGroup& g,
                                           const std::function<RankWork(int32_t rank)>& work) {
  struct Pending {
    RankWork w;
    vm::Ref<Buffer> recv;
    vm::Ref<Semaphore> sem;
  };
  std::vector<Pending> pending;
  for (size_t i = 0; i < g.devices.size(); ++i) {
    Device& d = *g.devices[i];
    Pending p{work(g.channels[i]->rank()), nullptr, nullptr};
    auto send = d.AllocateBuffer(std::max<uint64_t>(p.w.send.size(), 1));
    auto recv = d.AllocateBuffer(std::max<uint64_t>(p.w.recv_size, 1));
    RequireOk(send.status());
    RequireOk(recv.status());
    if (!p.w.send.empty()) RequireOk(d.WriteBuffer(**send, 0, p.w.send.data(), p.w.send.size()));
    auto cb = d.CreateCommandBuffer();
    RequireOk(cb.status());
    const Collective& c = p.w.c;
    RequireOk((*cb)->Collective(g.channels[i], c.kind, c.reduction, int32_t(c.type), c.count,
                                c.peer, BufferRef::Whole(*send), BufferRef::Whole(*recv)));
    RequireOk((*cb)->Finalize());
    auto sem = d.CreateSemaphore(0);
    RequireOk(sem.status());
    RequireOk(d.QueueExecute({}, *cb, {{*sem, 1}}));
    p.recv = *recv;
    p.sem = *sem;
    pending.push_back(std::move(p));
  }
  std::vector<std::vector<uint8_t>> results;
  for (size_t i = 0; i < pending.size(); ++i) {
    RequireOk(pending[i].sem->Wait(1));
    std::vector<uint8_t> got(pending[i].w.recv_size);
    if (!got.empty()) RequireOk(g.devices[i]->ReadBuffer(*pending[i].recv, 0, got.data(), got.size()));
    results.push_back(std::move(got));
  }
  return results;
}

void CheckReducing(const ChannelGroup& g, CollectiveKind kind) {
  const int32_t n = g.channels[0]->count();
  for (ElementType type : {ElementType::kF32, ElementType::kF16, ElementType::kI32}) {
    for (ReductionOp op : {ReductionOp::kSum, ReductionOp::kMax, ReductionOp::kMin,
                           ReductionOp::kProd}) {
      for (uint64_t count : {uint64_t{1}, uint64_t{7}, uint64_t{65537}}) {
        const uint64_t total = kind == CollectiveKind::kReduceScatter ? count * n : count;
        auto input = [&](int32_t rank) {
          std::vector<int64_t> v(total);
          for (uint64_t i = 0; i < total; ++i) v[i] = InputValue(rank, i);
          return v;
        };
        const uint64_t element = ElementTypeByteSize(int32_t(type));
        std::vector<std::vector<uint8_t>> got = RunGroup(g, [&](int32_t rank) {
          return RankWork{{kind, op, type, count, 0}, Encode(input(rank), type), count * element};
        });
        for (size_t local = 0; local < g.channels.size(); ++local) {
          const int32_t me = g.channels[local]->rank();
          std::vector<int64_t> expected(count);
          const uint64_t base = kind == CollectiveKind::kReduceScatter ? me * count : 0;
          for (int32_t r = 0; r < n; ++r) {
            std::vector<int64_t> in = input(r);
            for (uint64_t i = 0; i < count; ++i) {
              expected[i] = r == 0 ? in[base + i] : Reduce(op, expected[i], in[base + i]);
            }
          }
          INFO(CollectiveName(kind) << " " << ReductionName(op) << " of " << count << " x "
                                    << ElementTypeName(int32_t(type)) << " on "
                                    << g.channels[local]->Describe());
          REQUIRE(Decode(got[local], type) == expected);
        }
      }
    }
  }
}

}  // namespace

void ChannelAllReduce(const ChannelGroup& g) { CheckReducing(g, CollectiveKind::kAllReduce); }

void ChannelReduceScatter(const ChannelGroup& g) {
  CheckReducing(g, CollectiveKind::kReduceScatter);
}

void ChannelDataMovement(const ChannelGroup& g) {
  const int32_t n = g.channels[0]->count();
  std::vector<DeviceStats> before;
  for (Device* d : g.devices) before.push_back(d->stats());
  uint64_t collectives = 0;
  for (uint64_t count : {uint64_t{1}, uint64_t{7}, uint64_t{65537}}) {
    auto input = [&](int32_t rank) {
      std::vector<int64_t> v(count);
      for (uint64_t i = 0; i < count; ++i) v[i] = InputValue(rank, i) + 10 * rank;
      return v;
    };
    INFO(count << " x i32 on " << g.channels[0]->Describe() << " (and the group's other ranks)");
    // all_gather: rank r's values land at r * count.
    std::vector<int64_t> gathered;
    for (int32_t r = 0; r < n; ++r) {
      auto in = input(r);
      gathered.insert(gathered.end(), in.begin(), in.end());
    }
    for (const auto& got : RunGroup(g, [&](int32_t rank) {
           return RankWork{{CollectiveKind::kAllGather, ReductionOp::kSum, ElementType::kI32, count, 0},
                           Encode(input(rank), ElementType::kI32), 4 * count * n};
         })) {
      REQUIRE(got == Encode(gathered, ElementType::kI32));
    }
    // broadcast from the last rank (f16: bytes move unchanged).
    const int32_t root = n - 1;
    for (const auto& got : RunGroup(g, [&](int32_t rank) {
           return RankWork{{CollectiveKind::kBroadcast, ReductionOp::kSum, ElementType::kF16, count, root},
                           rank == root ? Encode(input(rank), ElementType::kF16) : std::vector<uint8_t>{},
                           2 * count};
         })) {
      REQUIRE(got == Encode(input(root), ElementType::kF16));
    }
    collectives += 2;
    // send/recv around a ring: even ranks send first, then receive; odd ranks the reverse.
    if (n > 1) {
      for (int step = 0; step < 2; ++step) {
        auto got = RunGroup(g, [&](int32_t rank) {
          const bool sends = (rank % 2 == 0) == (step == 0);
          if (sends) {
            return RankWork{{CollectiveKind::kSend, ReductionOp::kSum, ElementType::kI32, count, (rank + 1) % n},
                            Encode(input(rank), ElementType::kI32), 0};
          }
          return RankWork{{CollectiveKind::kRecv, ReductionOp::kSum, ElementType::kI32, count, (rank + n - 1) % n},
                          {}, 4 * count};
        });
        for (size_t local = 0; local < g.channels.size(); ++local) {
          const int32_t rank = g.channels[local]->rank();
          if ((rank % 2 == 0) == (step == 0)) continue;  // a sender
          REQUIRE(got[local] == Encode(input((rank + n - 1) % n), ElementType::kI32));
        }
      }
      collectives += 2;
    }
  }
  for (size_t i = 0; i < g.devices.size(); ++i) {
    REQUIRE(g.devices[i]->stats().collectives_executed - before[i].collectives_executed ==
            collectives);
  }
}

void ChannelReplay(const ChannelGroup& g) {
  // One recording through binding-table slots per rank, replayed on new buffers: sums of the
  // ranks.
  const int32_t n = g.channels[0]->count();
  std::vector<vm::Ref<CommandBuffer>> cbs;
  std::vector<vm::Ref<Semaphore>> sems;
  for (size_t i = 0; i < g.devices.size(); ++i) {
    auto cb = g.devices[i]->CreateCommandBuffer();
    RequireOk(cb.status());
    RequireOk((*cb)->Collective(g.channels[i], CollectiveKind::kAllReduce, ReductionOp::kSum,
                                int32_t(ElementType::kI32), 3, 0, BufferRef::Slot(0),
                                BufferRef::Slot(1)));
    RequireOk((*cb)->Finalize());
    REQUIRE((*cb)->binding_table_size() == 2);
    cbs.push_back(*cb);
    auto sem = g.devices[i]->CreateSemaphore(0);
    RequireOk(sem.status());
    sems.push_back(*sem);
  }
  for (int32_t call = 1; call <= 3; ++call) {
    std::vector<vm::Ref<Buffer>> recvs;
    for (size_t i = 0; i < g.devices.size(); ++i) {
      Device& d = *g.devices[i];
      auto send = d.AllocateBuffer(12), recv = d.AllocateBuffer(12);
      RequireOk(send.status());
      RequireOk(recv.status());
      int32_t values[3] = {g.channels[i]->rank() * call, 1, -call};
      RequireOk(d.WriteBuffer(**send, 0, values, 12));
      RequireOk(d.QueueExecute({}, cbs[i], {{sems[i], uint64_t(call)}},
                               {BufferRef::Whole(*send), BufferRef::Whole(*recv)}));
      recvs.push_back(*recv);
    }
    for (size_t i = 0; i < g.devices.size(); ++i) {
      RequireOk(sems[i]->Wait(call));
      int32_t got[3];
      RequireOk(g.devices[i]->ReadBuffer(*recvs[i], 0, got, 12));
      REQUIRE(got[0] == call * n * (n - 1) / 2);
      REQUIRE(got[1] == n);
      REQUIRE(got[2] == -call * n);
    }
  }
  // A slot smaller than the collective fails the submission naming the slot (checked before
  // the collective starts, so every rank fails alike and none waits for the others).
  for (size_t i = 0; i < g.devices.size(); ++i) {
    Device& d = *g.devices[i];
    auto small = d.AllocateBuffer(64), tiny = d.AllocateBuffer(8);
    RequireOk(small.status());
    RequireOk(tiny.status());
    RequireOk(d.QueueExecute({}, cbs[i], {{sems[i], 4}},
                             {BufferRef::Whole(*small), BufferRef::Whole(*tiny)}));
    Status failed = sems[i]->Wait(4);
    REQUIRE(failed.code() == StatusCode::kOutOfRange);
    REQUIRE_THAT(failed.message(),
                 Catch::Contains("all_reduce recv buffer (binding table slot 1): 12 bytes needed"));
  }
}

void ChannelMisuse(const ChannelGroup& g) {
  Device& d = *g.devices[0];
  const vm::Ref<Channel>& channel = g.channels[0];
  auto cb = d.CreateCommandBuffer();
  RequireOk(cb.status());
  auto buffer = d.AllocateBuffer(64);
  RequireOk(buffer.status());
  const auto whole = BufferRef::Whole(*buffer);
  auto message = [](const Status& s) { return s.message(); };
  Status s = (*cb)->Collective(channel, CollectiveKind::kAllReduce, ReductionOp::kSum,
                               int32_t(ElementType::kF32), 17, 0, whole, whole);
  REQUIRE(s.code() == StatusCode::kOutOfRange);
  REQUIRE_THAT(message(s), Catch::Contains("all_reduce send buffer: 68 bytes needed"));
  s = (*cb)->Collective(channel, CollectiveKind::kBroadcast, ReductionOp::kSum,
                        int32_t(ElementType::kF32), 1, channel->count(), whole, whole);
  REQUIRE(s.code() == StatusCode::kOutOfRange);
  REQUIRE_THAT(message(s), Catch::Contains("broadcast: peer rank " +
                                           std::to_string(channel->count()) + " is not a rank of"));
  s = (*cb)->Collective(channel, CollectiveKind::kSend, ReductionOp::kSum,
                        int32_t(ElementType::kF32), 1, channel->rank(), whole, whole);
  REQUIRE_THAT(message(s), Catch::Contains("send: peer rank " + std::to_string(channel->rank()) +
                                           " is this rank"));
  s = (*cb)->Collective(channel, CollectiveKind::kAllReduce, ReductionOp::kSum,
                        int32_t(ElementType::kI1), 1, 0, whole, whole);
  REQUIRE_THAT(message(s), Catch::Contains("i1 values cannot be reduced"));
  s = (*cb)->Collective(channel, CollectiveKind::kAllReduce, static_cast<ReductionOp>(9),
                        int32_t(ElementType::kF32), 1, 0, whole, whole);
  REQUIRE_THAT(message(s), Catch::Contains("unknown reduction 9"));
  s = (*cb)->Collective(nullptr, CollectiveKind::kAllReduce, ReductionOp::kSum,
                        int32_t(ElementType::kF32), 1, 0, whole, whole);
  REQUIRE_THAT(message(s), Catch::Contains("all_reduce: channel is null"));
}

void ChannelOverlap(const ChannelGroup& g) {
  // Per rank: x -> all_reduce -> s | barrier | copy x -> u (reads only its input), fill z,
  // copy y -> w (touch neither x nor s): they may run beside the all_reduce | barrier | copy
  // s -> t (reads its result), fill x with 0 (overwrites its input): both must wait for it
  // (hal/command_ranges.h). The read of x comes first: a driver that made it wait would run
  // nothing beside the all_reduce and count no overlap. Once with direct buffers (CUDA: a
  // graph), once with the all_reduce on binding-table slots (CUDA: stream launches; copies and
  // fills take buffers, so there the ordering sees a slot and a direct reference to one buffer).
  const int32_t n = g.channels[0]->count();
  const uint64_t count = 1 << 20, bytes = 4 * count;
  enum { kX, kS, kY, kW, kZ, kT, kU, kBuffers };
  for (bool slots : {false, true}) {
    std::vector<DeviceStats> before;
    std::vector<std::vector<vm::Ref<Buffer>>> buffers(g.devices.size());
    std::vector<vm::Ref<Semaphore>> sems;
    for (size_t i = 0; i < g.devices.size(); ++i) {
      Device& d = *g.devices[i];
      before.push_back(d.stats());
      for (int b = 0; b < kBuffers; ++b) buffers[i].push_back(Alloc(d, bytes));
      std::vector<int32_t> x(count), y(count);
      for (uint64_t e = 0; e < count; ++e) {
        x[e] = g.channels[i]->rank() * 3 + int32_t(e % 7);
        y[e] = int32_t(e);
      }
      RequireOk(d.WriteBuffer(*buffers[i][kX], 0, x.data(), bytes));
      RequireOk(d.WriteBuffer(*buffers[i][kY], 0, y.data(), bytes));
      auto ref = [&](int b) {
        return slots ? BufferRef::Slot(b) : BufferRef::Range(buffers[i][b], 0, bytes);
      };
      auto cb = d.CreateCommandBuffer();
      RequireOk(cb.status());
      CommandBuffer& c = **cb;
      RequireOk(c.Collective(g.channels[i], CollectiveKind::kAllReduce, ReductionOp::kSum,
                             int32_t(ElementType::kI32), count, 0, ref(kX), ref(kS)));
      RequireOk(c.Barrier());
      RequireOk(c.CopyBuffer(buffers[i][kX], 0, buffers[i][kU], 0, bytes));
      RequireOk(c.FillBuffer(buffers[i][kZ], 0, bytes, 0x01020304, 4));
      RequireOk(c.CopyBuffer(buffers[i][kY], 0, buffers[i][kW], 0, bytes));
      RequireOk(c.Barrier());
      RequireOk(c.CopyBuffer(buffers[i][kS], 0, buffers[i][kT], 0, bytes));
      RequireOk(c.FillBuffer(buffers[i][kX], 0, bytes, 0, 4));
      RequireOk(c.Finalize());
      sems.push_back(NewSem(d, 0));
      std::vector<BufferRef> table;
      if (slots) {
        for (int b = 0; b < kBuffers; ++b) table.push_back(BufferRef::Whole(buffers[i][b]));
      }
      RequireOk(d.QueueExecute({}, *cb, {{sems.back(), 1}}, table));
    }
    for (size_t i = 0; i < g.devices.size(); ++i) {
      Device& d = *g.devices[i];
      RequireOk(sems[i]->Wait(1));
      std::vector<int32_t> t(count), w(count), z(count), x(count), u(count);
      RequireOk(d.ReadBuffer(*buffers[i][kT], 0, t.data(), bytes));
      RequireOk(d.ReadBuffer(*buffers[i][kW], 0, w.data(), bytes));
      RequireOk(d.ReadBuffer(*buffers[i][kZ], 0, z.data(), bytes));
      RequireOk(d.ReadBuffer(*buffers[i][kX], 0, x.data(), bytes));
      RequireOk(d.ReadBuffer(*buffers[i][kU], 0, u.data(), bytes));
      uint64_t wrong_t = 0, wrong_w = 0, wrong_z = 0, wrong_x = 0, wrong_u = 0;
      for (uint64_t e = 0; e < count; ++e) {
        wrong_t += t[e] != n * int32_t(e % 7) + 3 * n * (n - 1) / 2;
        wrong_w += w[e] != int32_t(e);
        wrong_z += z[e] != 0x01020304;
        wrong_x += x[e] != 0;
        wrong_u += u[e] != g.channels[i]->rank() * 3 + int32_t(e % 7);  // x before the fill
      }
      INFO((slots ? "slots" : "direct buffers") << " on " << g.channels[i]->Describe());
      CHECK(wrong_t == 0);  // the copy of the result waited for the all_reduce
      CHECK(wrong_w == 0);
      CHECK(wrong_z == 0);
      CHECK(wrong_x == 0);
      CHECK(wrong_u == 0);
      const DeviceStats after = d.stats();
      CHECK(after.collectives_executed - before[i].collectives_executed == 1);
      const uint64_t overlapped = after.collectives_overlapped - before[i].collectives_overlapped;
      // The copies and the fill between the barriers ran beside the all_reduce, on every
      // driver and however fast its peers joined (counted from the recording, not timing).
      CHECK(overlapped == 1);
    }
  }
}

void ChannelOverlapCase(const DriverConfig&, Device& d) {
  ChannelGroup g;
  if (GroupOrSkip(d, "channel_overlap", &g)) ChannelOverlap(g);
}

#define HEXIR_CHANNEL_CASE_(Name, case_name)                    \
  void Channel##Name##Case(const DriverConfig&, Device& d) {    \
    ChannelGroup g;                                             \
    if (GroupOrSkip(d, case_name, &g)) Channel##Name(g);        \
  }
HEXIR_CHANNEL_CASE_(AllReduce, "channel_all_reduce")
HEXIR_CHANNEL_CASE_(ReduceScatter, "channel_reduce_scatter")
HEXIR_CHANNEL_CASE_(DataMovement, "channel_data_movement")
HEXIR_CHANNEL_CASE_(Replay, "channel_replay")
HEXIR_CHANNEL_CASE_(Misuse, "channel_misuse")
#undef HEXIR_CHANNEL_CASE_

namespace {

// This process's place in a one-process-per-rank launch (mpirun's environment or a
// torchrun-style one); false, after the case's skip line, unless there are 2 or more ranks.
struct LaunchedRank {
  int32_t size = 0, rank = 0;
  bool mpi = false;
};
bool LaunchedRankOrSkip(const char* case_name, LaunchedRank* out) {
  const bool mpi = std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr;
  const char* size = std::getenv(mpi ? "OMPI_COMM_WORLD_SIZE" : "WORLD_SIZE");
  const char* rank = std::getenv(mpi ? "OMPI_COMM_WORLD_RANK" : "RANK");
  if (size == nullptr || rank == nullptr || std::atoi(size) < 2) {
    std::printf("HEXIR_SKIPPED: cts/%s: needs 2 or more ranks under mpirun or a "
                "torchrun-style launch\n", case_name);
    return false;
  }
  *out = {std::atoi(size), std::atoi(rank), mpi};
  return true;
}

// Submits `cb` once and waits for its signal: the wait's status, and in `seconds` the time
// from the submission to the wait's return.
Status SubmitAndWait(Device& d, const vm::Ref<CommandBuffer>& cb, double* seconds) {
  auto sem = d.CreateSemaphore(0);
  RequireOk(sem.status());
  const auto start = std::chrono::steady_clock::now();
  RequireOk(d.QueueExecute({}, cb, {{*sem, 1}}));
  Status st = (*sem)->Wait(1);
  *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return st;
}

}  // namespace

// Only with 2 or more ranks: the last rank waits in a recv that rank 0 never sends while the
// other ranks run an all_reduce the last rank never joins. The all_reduce ranks time out
// (HEXIR_COLLECTIVE_TIMEOUT 1 s) naming the collective; the last rank then fails by their
// notice, naming rank 0 and its all_reduce, long before its own 60 s timeout.
// One process per rank, under mpirun or a torchrun-style launch.
void ChannelFailureCase(const DriverConfig&, Device& d) {
  LaunchedRank launched;
  if (!LaunchedRankOrSkip("channel_failure", &launched)) return;
  const int32_t n = launched.size, me = launched.rank;
  setenv("HEXIR_COLLECTIVE_TIMEOUT", me == n - 1 ? "60" : "1", 1);
  const vm::Ref<Channel> channel = GroupOf(d).channels[0];
  const std::string on = " on the " + std::string(channel->backend()) + " channel rank ";
  auto buffer = d.AllocateBuffer(64);
  RequireOk(buffer.status());
  auto cb = d.CreateCommandBuffer();
  RequireOk(cb.status());
  if (me == n - 1) {
    RequireOk((*cb)->Collective(channel, CollectiveKind::kRecv, ReductionOp::kSum,
                                int32_t(ElementType::kF32), 4, 0, {}, BufferRef::Whole(*buffer)));
  } else {
    RequireOk((*cb)->Collective(channel, CollectiveKind::kAllReduce, ReductionOp::kSum,
                                int32_t(ElementType::kF32), 4, 0, BufferRef::Whole(*buffer),
                                BufferRef::Whole(*buffer)));
  }
  RequireOk((*cb)->Finalize());
  double seconds = 0;
  Status st = SubmitAndWait(d, *cb, &seconds);
  INFO(st.ToString());
  if (me == n - 1) {
    REQUIRE(st.code() == StatusCode::kAborted);
    REQUIRE_THAT(st.message(), Catch::Contains("recv (collective #1" + on +
                                               std::to_string(me)));
    REQUIRE_THAT(st.message(), Catch::Contains("failed because rank"));
    REQUIRE_THAT(st.message(), Catch::Contains("all_reduce (collective #1"));
    REQUIRE(seconds < 30);
  } else {
    // Its own timeout, or (with 3+ ranks) the notice of another all_reduce rank that timed
    // out first.
    REQUIRE((st.code() == StatusCode::kDeadlineExceeded || st.code() == StatusCode::kAborted));
    REQUIRE_THAT(st.message(), Catch::Contains("all_reduce (collective #1" + on +
                                               std::to_string(me) + " of " + std::to_string(n)));
    REQUIRE_THAT(st.message(), Catch::Contains("timed out after"));
    if (st.code() == StatusCode::kAborted) {
      REQUIRE_THAT(st.message(), Catch::Contains("failed because rank"));
    }
  }
  // The channel stays failed: a later collective fails at once.
  auto again = d.CreateCommandBuffer();
  RequireOk(again.status());
  RequireOk((*again)->Collective(channel, CollectiveKind::kBroadcast, ReductionOp::kSum,
                                 int32_t(ElementType::kF32), 4, 0, BufferRef::Whole(*buffer),
                                 BufferRef::Whole(*buffer)));
  RequireOk((*again)->Finalize());
  auto fresh = d.CreateSemaphore(0);  // `sem` keeps its failure (sticky)
  RequireOk(fresh.status());
  RequireOk(d.QueueExecute({}, *again, {{*fresh, 1}}));
  Status later = (*fresh)->Wait(1);
  REQUIRE_FALSE(later.ok());
  REQUIRE_THAT(later.message(), Catch::Contains("broadcast (collective #2"));
}

// Only with 2 or more ranks, one process per rank: the last rank dies (_exit(3), no channel
// teardown, no notice) once its channel is up, while the others run an all_reduce it never
// joins. Under a torchrun-style launch (Gloo) each other rank's call fails as soon as the
// connection closes (Aborted, naming the all_reduce and its rank: "a rank died"), well before
// its 60 s timeout. MPI reports no dead peer: the others' calls fail at their timeout (2 s
// here: DeadlineExceeded naming the all_reduce and the rank, or Aborted by another rank's
// notice), when mpirun lets the job go on after a death (mpi_cts_test.sh runs it with
// orte_abort_on_non_zero_status 0; by default mpirun ends the job itself, naming the rank).
void ChannelDeadRankCase(const DriverConfig&, Device& d) {
  LaunchedRank launched;
  if (!LaunchedRankOrSkip("channel_dead_rank", &launched)) return;
  const int32_t n = launched.size, me = launched.rank;
  const bool mpi = launched.mpi;
  setenv("HEXIR_COLLECTIVE_TIMEOUT", mpi ? "2" : "60", 1);
  const vm::Ref<Channel> channel = GroupOf(d).channels[0];
  if (me == n - 1) {
    std::fflush(stdout);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the others are in the all_reduce
    _exit(3);
  }
  auto buffer = d.AllocateBuffer(64);
  RequireOk(buffer.status());
  auto cb = d.CreateCommandBuffer();
  RequireOk(cb.status());
  RequireOk((*cb)->Collective(channel, CollectiveKind::kAllReduce, ReductionOp::kSum,
                              int32_t(ElementType::kF32), 4, 0, BufferRef::Whole(*buffer),
                              BufferRef::Whole(*buffer)));
  RequireOk((*cb)->Finalize());
  double seconds = 0;
  Status st = SubmitAndWait(d, *cb, &seconds);
  INFO(st.ToString());
  std::printf("rank %d of %d: %s after %.2f s\n", me, n, st.ToString().c_str(), seconds);
  REQUIRE_THAT(st.message(), Catch::Contains("all_reduce (collective #1 on the " +
                                             std::string(channel->backend()) + " channel rank " +
                                             std::to_string(me) + " of " + std::to_string(n)));
  if (mpi) {
    REQUIRE((st.code() == StatusCode::kDeadlineExceeded || st.code() == StatusCode::kAborted));
    REQUIRE_THAT(st.message(), Catch::Contains("timed out after"));
  } else {
    REQUIRE(st.code() == StatusCode::kAborted);
    REQUIRE_THAT(st.message(), Catch::Contains("a rank died"));
  }
  REQUIRE(seconds < 30);
}

}  // namespace hexir::hal::cts
