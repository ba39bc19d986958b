#include "hal/drivers/cpu/cpu_collective.h"

namespace hexir::hal::cpu {

Status CheckHostCollective(const CollectiveCommand& cmd) {
  if (dynamic_cast<const HostChannel*>(cmd.channel.get()) == nullptr) {
    return InvalidArgument(CollectiveName(cmd.kind), " on a ", cmd.channel->backend(),
                           " channel cannot run on a cpu device");
  }
  return Status::Ok();
}

namespace {

// The host address of a resolved send/recv reference (null when the kind has no such buffer).
StatusOr<uint8_t*> HostAddress(const BufferRef& ref, const std::vector<BufferRef>& table,
                               const CollectiveCommand& cmd, const char* role) {
  if (ref.length == 0 || (!ref.is_slot() && !ref.buffer)) return nullptr;
  const BufferRef& actual = ref.is_slot() ? table[ref.slot] : ref;
  uint64_t offset = ref.is_slot() ? actual.offset + ref.offset : ref.offset;
  if (ref.is_slot() && (ref.offset > actual.length || actual.length - ref.offset < ref.length)) {
    return OutOfRange(CollectiveName(cmd.kind), " ", role, " buffer (binding table slot ",
                      ref.slot, "): ", ref.length, " bytes needed, the slot holds ",
                      actual.length - std::min(actual.length, ref.offset));
  }
  if (actual.buffer->host_data() == nullptr) {
    return InvalidArgument(CollectiveName(cmd.kind), " ", role,
                           " buffer is not host memory (allocated by another driver?)");
  }
  return actual.buffer->host_data() + offset;
}

}  // namespace

StatusOr<HostChannel::Operation> ResolveHostCollective(const CollectiveCommand& cmd,
                                                       const std::vector<BufferRef>& table) {
  HostChannel::Operation op;
  static_cast<CollectiveParams&>(op) = cmd;
  HEXIR_ASSIGN_OR_RETURN(uint8_t* send, HostAddress(cmd.send, table, cmd, "send"));
  HEXIR_ASSIGN_OR_RETURN(uint8_t* recv, HostAddress(cmd.recv, table, cmd, "recv"));
  op.send = send;
  op.recv = recv;
  return op;
}

}  // namespace hexir::hal::cpu
