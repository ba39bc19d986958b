// The failure rule of the networked host channels (MPI, Gloo), written once:
//   - a collective is named "<kind> (collective #N on the <channel>)" in its errors;
//   - once a collective failed, every later one on the channel fails with that error (a group
//     that lost a collective midway cannot be reused);
//   - a rank whose own collective failed (timed out, a backend error) tells every peer
//     "rank R failed: <error>" (NotifyPeers, best effort, not awaited);
//   - a rank told so while it waits fails with Aborted "<its collective>: failed because rank R
//     failed: <error>" (PeerFailed), and tells no one: the failing rank already did;
//   - a rank whose program failed outside a collective abandons the channel (Abandon): it
//     breaks and tells its peers the same way, so none of them waits out the timeout.
// A backend implements RunCollective and NotifyPeers; Run is called on one thread at a time
// (a device's queue thread), like every HostChannel.
#pragma once

#include <string>
#include <string_view>

#include "hal/channel.h"

namespace hexir::hal::cpu {

class FailureNotifyingChannel : public HostChannel {
 public:
  Status Run(const Operation& op) override;
  // Called once the rank's queue is drained (no Run in flight).
  void Abandon(const Status& why) override;

 protected:
  using HostChannel::HostChannel;

  // Runs `op` to completion; `what` names the collective for errors.
  virtual Status RunCollective(const Operation& op, const std::string& what) = 0;
  // Sends `notice` ("rank R failed: <error>") to every peer.
  virtual void NotifyPeers(const std::string& notice) = 0;

  // For RunCollective: a peer's `notice` arrived while `what` ran.
  Status PeerFailed(const std::string& what, std::string_view notice);
  // For RunCollective: `what` waited `seconds` for its peers, past the channel's timeout.
  static Status TimedOut(const std::string& what, double seconds);
  // The running collective's number on this channel, from 1 (the same on every rank).
  uint64_t sequence() const { return sequence_; }

 private:
  uint64_t sequence_ = 0;
  Status broken_;             // the first failure; ok while none
  bool peer_failed_ = false;  // broken_ came from a peer's notice
};

}  // namespace hexir::hal::cpu
