// The CPU driver's side of collectives: a recorded CollectiveCommand becomes a
// HostChannel::Operation over the buffers' host memory (slots resolved against the
// submission's binding table), which the device's collective lane (collective_lane.h) runs.
#pragma once

#include <vector>

#include "base/status.h"
#include "hal/command_buffer.h"

namespace hexir::hal::cpu {

// Submission-time check: the command's channel runs on host memory ("all_reduce on a nccl
// channel cannot run on a cpu device" otherwise).
Status CheckHostCollective(const CollectiveCommand& cmd);

// `cmd` with its send and recv addresses resolved (slot lengths checked here against
// `table`); null addresses where the kind has no such buffer.
StatusOr<HostChannel::Operation> ResolveHostCollective(const CollectiveCommand& cmd,
                                                       const std::vector<BufferRef>& table);

}  // namespace hexir::hal::cpu
