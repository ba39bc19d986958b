// The MPI host channel: collectives of CPU ranks started by mpirun, run by Open MPI's
// non-blocking collectives (MPI_Iallreduce, ...) that the queue thread polls until they
// complete or the channel's timeout passes.
//
// f16 and bf16 reductions are computed in f32 (each rank widens, MPI reduces f32, the result
// is rounded once); byte-moving collectives move any element type unchanged.
//
// Failure notices: each channel keeps a second communicator on which a rank whose collective
// failed (timed out, or MPI returned an error) sends "rank R: <error>" to every peer; a rank
// polling its own collective sees the notice and fails with Aborted naming rank R. A failed
// channel stays failed (its abandoned MPI request cannot be cancelled).
#pragma once

#include "hal/channel.h"

namespace hexir::hal::cpu {

// A new channel over a duplicate of MPI_COMM_WORLD (collective: every rank must call it).
StatusOr<vm::Ref<HostChannel>> CreateMpiChannel(std::chrono::nanoseconds timeout);

// True when this process looks started by mpirun (Open MPI or PMIx rank variables set).
bool LaunchedByMpirun();

}  // namespace hexir::hal::cpu
