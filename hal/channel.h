// hal.channel: one rank's membership in a group of devices that exchange data by collectives.
//
// A channel knows its rank, the number of ranks (count) and the engine underneath (backend:
// "local" for a group of one, "mpi" for CPU ranks started by mpirun, "gloo" for CPU ranks of
// an in-process group or a torchrun-style launch, "nccl" for CUDA). It
// does not move data by itself: collectives are recorded into command buffers
// (CommandBuffer::Collective) and run in queue order like dispatches, on the device whose
// driver understands the channel's backend (Device::CreateChannel makes one it understands).
//
// Collective semantics (NCCL's; `count` elements of `element_type`, N = count of ranks):
//   all_reduce      send: count        recv: count        recv = op over ranks of send
//   all_gather      send: count        recv: N * count    recv[r*count ...] = rank r's send
//   reduce_scatter  send: N * count    recv: count        recv = op over ranks of send[rank*count ...]
//   broadcast       send: count (peer) recv: count        recv = send of rank `peer` (the root)
//   send            send: count        -                  to rank `peer`
//   recv            -                  recv: count        from rank `peer`
// Every rank of the channel must record the same collectives in the same order (SPMD);
// send/recv pair up by order between two ranks.
//
// Failures: a collective that does not complete within the channel's timeout fails with
// DeadlineExceeded naming the collective, its sequence number and the waiting rank; a rank
// whose collective fails tells its peers, whose collectives then fail with Aborted naming
// that rank. Either way the channel is broken afterwards: later collectives fail at once.
//
// Ownership: refcounted; command buffers retain the channels they record.
// Thread-safety: the collectives of one channel run on one queue (the device's); Run may be
// called from any one thread at a time per channel.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "vm/ref.h"

namespace hexir::hal {

// Codes are bytecode ABI (immediates of hal.command_buffer.collective): never renumber.
#define HEXIR_COLLECTIVE_KINDS(X) \
  X(AllReduce, 0, "all_reduce")   \
  X(AllGather, 1, "all_gather")   \
  X(ReduceScatter, 2, "reduce_scatter") \
  X(Broadcast, 3, "broadcast")    \
  X(Send, 4, "send")              \
  X(Recv, 5, "recv")

#define HEXIR_REDUCTION_OPS(X) \
  X(Sum, 0, "sum")             \
  X(Max, 1, "max")             \
  X(Min, 2, "min")             \
  X(Prod, 3, "prod")

enum class CollectiveKind : int32_t {
#define HEXIR_COLLECTIVE_ENUM_(Name, code, spelling) k##Name = code,
  HEXIR_COLLECTIVE_KINDS(HEXIR_COLLECTIVE_ENUM_)
#undef HEXIR_COLLECTIVE_ENUM_
};

enum class ReductionOp : int32_t {
#define HEXIR_REDUCTION_ENUM_(Name, code, spelling) k##Name = code,
  HEXIR_REDUCTION_OPS(HEXIR_REDUCTION_ENUM_)
#undef HEXIR_REDUCTION_ENUM_
};

// "all_reduce", "sum"; "" for an unknown code.
std::string_view CollectiveName(CollectiveKind kind);
std::string_view ReductionName(ReductionOp op);
// True for a code of the tables above.
bool IsCollectiveKind(int64_t code);
bool IsReductionOp(int64_t code);
// all_reduce and reduce_scatter combine values; the others only move bytes.
inline bool CollectiveReduces(CollectiveKind kind) {
  return kind == CollectiveKind::kAllReduce || kind == CollectiveKind::kReduceScatter;
}
// broadcast, send and recv name a peer rank (the root of a broadcast).
inline bool CollectiveHasPeer(CollectiveKind kind) {
  return kind == CollectiveKind::kBroadcast || kind == CollectiveKind::kSend ||
         kind == CollectiveKind::kRecv;
}

// The bytes a collective of `count` elements reads from its send buffer and writes into its
// recv buffer on one rank of `rank_count` (0 where the collective has no such buffer; the
// root of a broadcast reads `count` elements, the other ranks read nothing).
struct CollectiveBytes {
  uint64_t send = 0;
  uint64_t recv = 0;
};
CollectiveBytes CollectiveByteSizes(CollectiveKind kind, uint64_t count, uint64_t element_bytes,
                                    int32_t rank, int32_t rank_count, int32_t peer);

// What a collective computes, its buffers aside: the recorded command (hal/command_buffer.h)
// and every backend's operation carry these fields, so a driver copies them in one step.
struct CollectiveParams {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  ReductionOp reduction = ReductionOp::kSum;
  int32_t element_type = 0;  // hal/element_types.def code
  uint64_t count = 0;
  int32_t peer = 0;  // the root of a broadcast, the other rank of send/recv
};

// How long one collective may wait for its peers before failing (HEXIR_COLLECTIVE_TIMEOUT,
// in seconds, overrides the default of 300 s for channels created afterwards).
std::chrono::nanoseconds DefaultCollectiveTimeout();

class Channel : public vm::RefObject {
  HEXIR_REF_TYPE(Channel, "hal.channel")
 public:
  int32_t rank() const { return rank_; }
  int32_t count() const { return count_; }
  virtual std::string_view backend() const = 0;
  std::chrono::nanoseconds timeout() const { return timeout_; }

  // "mpi channel rank 1 of 4": how errors name this rank.
  std::string Describe() const;

  // This rank takes part in no more collectives because of `why` (its program failed): the
  // channel breaks (later collectives fail at once) and, where the backend can tell them,
  // peers blocked in a collective with this rank fail at once with Aborted "... failed
  // because rank R failed: <why>" instead of waiting for the timeout (gloo; nccl aborts this
  // rank's communicator; mpi and local: nothing, peers time out). Call it once this
  // channel's device has no collective running (after its queue went idle).
  virtual void Abandon(const Status& why) { (void)why; }

 protected:
  Channel(int32_t rank, int32_t count, std::chrono::nanoseconds timeout)
      : rank_(rank), count_(count), timeout_(timeout) {}

 private:
  int32_t rank_;
  int32_t count_;
  std::chrono::nanoseconds timeout_;
};

// A channel whose collectives read and write host memory on the calling thread (CPU
// devices run them on their queue thread).
class HostChannel : public Channel {
 public:
  struct Operation : CollectiveParams {
    const void* send = nullptr;  // CollectiveByteSizes(...).send bytes
    void* recv = nullptr;        // CollectiveByteSizes(...).recv bytes
  };
  // Runs one collective to completion (or failure, see the header comment).
  virtual Status Run(const Operation& op) = 0;

 protected:
  using Channel::Channel;
};

// Host channels (implemented by the CPU driver). The backend is chosen once per call:
// HEXIR_CHANNEL_BACKEND (local, mpi or gloo) when set, else "mpi" when the process was started
// by mpirun (OMPI_COMM_WORLD_SIZE or PMIX_RANK set; libmpi is dlopened, HEXIR_MPI_LIBRARY
// names it, default libmpi.so.40), else "gloo" under a torchrun-style launch (RANK and
// WORLD_SIZE set; rendezvous in hal/drivers/cpu/gloo_channel.h), else "local".
//
// The channel of this process's one device: MPI (a duplicate of the world communicator, a
// collective call on every rank), Gloo (rank RANK of WORLD_SIZE), or a local channel of one
// rank. Each call creates a new channel.
StatusOr<vm::Ref<HostChannel>> CreateHostChannel();

// Channels for `local_count` devices driven by this process, channel i for device i: under
// "local" an in-process Gloo group (ranks 0..local_count-1; one device: a local channel),
// under "gloo" with a torchrun-style launch ranks RANK*local_count + i of
// WORLD_SIZE*local_count, under "mpi" one device only (Unimplemented otherwise). Blocks
// until every rank joined (or the collective timeout passed).
StatusOr<std::vector<vm::Ref<HostChannel>>> CreateHostChannels(int32_t local_count);

// An in-process group: `count` channels, ranks 0..count-1, connected through Gloo over
// loopback TCP (a Gloo HashStore for the rendezvous). Give channel i to device i; each runs
// its collectives on its device's queue thread, so all ranks progress at once.
StatusOr<std::vector<vm::Ref<HostChannel>>> CreateInProcessChannels(int32_t count);

}  // namespace hexir::hal
