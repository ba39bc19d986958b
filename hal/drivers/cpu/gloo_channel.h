// The Gloo host channel: collectives of CPU ranks run by Gloo (Debian libgloo-dev) through
// libhexir_gloo.so (gloo_shim.h), which is dlopened on the first Gloo channel: HEXIR_GLOO_LIBRARY
// names it, else it is looked for beside the executable, in its Bazel runfiles and in the
// hal/drivers/cpu folder of a bazel-bin above it, then on the loader's path.
//
// Two ways to form a group, both rendezvousing through Gloo's stores over its TCP transport
// (loopback in one process):
//   - in process: N channels, ranks 0..N-1, over a store private to them (a HashStore);
//   - torchrun-style: the process is rank RANK of WORLD_SIZE; the store is HEXIR_RENDEZVOUS
//     (file:PATH, a directory every process can reach) or, when MASTER_ADDR is this machine
//     (localhost, 127.x, its host name), file:/tmp/hexir-rendezvous-MASTER_PORT. Ranks listen
//     on HEXIR_GLOO_HOSTNAME, else 127.0.0.1 when MASTER_ADDR is local, else this host's name.
//     A process driving L devices holds ranks RANK*L .. RANK*L+L-1 of WORLD_SIZE*L.
// Every process must create its channels in the same order (each creation is a rendezvous).
//
// f16/bf16 reductions run in f32 (widened before, rounded once after), as on MPI. Failures:
// a collective that times out or loses a peer posts "rank R failed: ..." in the store and
// closes its connections, so peers blocked with it fail at once with Aborted naming rank R.
#pragma once

#include <vector>

#include "hal/channel.h"

namespace hexir::hal::cpu {

// The torchrun-style launch of this process, read from the environment.
struct LaunchEnvironment {
  int32_t rank = 0;
  int32_t world_size = 1;
  std::string rendezvous;  // "file:PATH"
  std::string hostname;    // where this process's ranks listen
};

// True when RANK and WORLD_SIZE are set (a torchrun-style launch).
bool LaunchedByTorchrun();
// The launch environment; InvalidArgument naming the variable that is missing or malformed.
StatusOr<LaunchEnvironment> ReadLaunchEnvironment();

// `local_count` channels of one in-process group (ranks 0..local_count-1) when `launch` is
// null, else ranks launch->rank*local_count + i of launch->world_size*local_count. Blocks
// until every rank joined (or `timeout` passed: DeadlineExceeded naming the rendezvous).
StatusOr<std::vector<vm::Ref<HostChannel>>> CreateGlooChannels(const LaunchEnvironment* launch,
                                                               int32_t local_count,
                                                               std::chrono::nanoseconds timeout);

}  // namespace hexir::hal::cpu
