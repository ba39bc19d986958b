#include "hal/drivers/cpu/channel_failure.h"

namespace hexir::hal::cpu {

Status FailureNotifyingChannel::Run(const Operation& op) {
  ++sequence_;
  const std::string what =
      StrCat(CollectiveName(op.kind), " (collective #", sequence_, " on the ", Describe(), ")");
  if (!broken_.ok()) return Status(broken_.code(), StrCat(what, ": ", broken_.message()));
  Status status = RunCollective(op, what);
  if (!status.ok() && !peer_failed_) {
    broken_ = status;
    NotifyPeers(StrCat("rank ", rank(), " failed: ", status.message()));
  }
  return status;
}

void FailureNotifyingChannel::Abandon(const Status& why) {
  if (!broken_.ok()) return;  // already failed: the peers were told (or told this rank)
  broken_ = Aborted("this rank abandoned the channel: ", why.message());
  NotifyPeers(StrCat("rank ", rank(), " failed: ", why.message()));
}

Status FailureNotifyingChannel::PeerFailed(const std::string& what, std::string_view notice) {
  peer_failed_ = true;
  broken_ = Aborted("failed because ", notice);
  return Aborted(what, ": failed because ", notice);
}

Status FailureNotifyingChannel::TimedOut(const std::string& what, double seconds) {
  return DeadlineExceeded(what, ": timed out after ", seconds,
                          " s waiting for its peers (a rank died, hangs, or recorded a "
                          "different collective; HEXIR_COLLECTIVE_TIMEOUT sets the limit)");
}

}  // namespace hexir::hal::cpu
