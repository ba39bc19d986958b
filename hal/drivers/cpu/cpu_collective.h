// The CPU driver's side of collectives: a recorded CollectiveCommand runs on the queue thread
// through its channel's HostChannel::Run over the buffers' host memory.
#pragma once

#include <vector>

#include "base/status.h"
#include "hal/command_buffer.h"

namespace hexir::hal::cpu {

// Submission-time check: the command's channel runs on host memory ("all_reduce on a nccl
// channel cannot run on a cpu device" otherwise).
Status CheckHostCollective(const CollectiveCommand& cmd);

// Runs `cmd` with its slot buffers taken from `table` (lengths checked here). Blocks until
// the collective completes or fails (the channel's timeout bounds the wait).
Status ExecuteHostCollective(const CollectiveCommand& cmd, const std::vector<BufferRef>& table);

}  // namespace hexir::hal::cpu
