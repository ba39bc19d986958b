#include "hal/drivers/cpu/mpi_channel.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "hal/drivers/cpu/channel_failure.h"
#include "hal/drivers/cpu/mpi_api.h"
#include "hal/drivers/cpu/widened_reduction.h"
#include "hal/element_type.h"

namespace hexir::hal::cpu {
namespace {

constexpr int kNoticeTag = 7;
constexpr size_t kNoticeBytes = 1024;

// Every MPI call of the process goes through this lock: MPI is initialized at
// MPI_THREAD_SERIALIZED, and channels may live on several devices' queue threads.
std::mutex& MpiLock() {
  static std::mutex mu;
  return mu;
}

class MpiChannel final : public FailureNotifyingChannel {
 public:
  MpiChannel(const MpiApi& api, MPI_Comm data, MPI_Comm notices, std::chrono::nanoseconds timeout)
      : FailureNotifyingChannel(api.rank, api.size, timeout),
        api_(api),
        data_(data),
        notices_(notices) {}

  std::string_view backend() const override { return "mpi"; }

  Status Run(const Operation& op) override {
    std::lock_guard<std::mutex> lock(MpiLock());
    return FailureNotifyingChannel::Run(op);
  }

 private:
  Status RunCollective(const Operation& op, const std::string& what) override {
    HEXIR_RETURN_IF_ERROR(PostNoticeReceive(what));
    return RunLocked(op, what);
  }

  Status PostNoticeReceive(const std::string& what) {
    if (notice_posted_) return Status::Ok();
    int rc = api_.MPI_Irecv(notice_.data(), int(notice_.size()), api_.byte, MPI_ANY_SOURCE,
                            kNoticeTag, notices_, &notice_request_);
    if (rc != MPI_SUCCESS) return Internal(what, ": MPI_Irecv of failure notices: ", MpiErrorText(api_, rc));
    notice_posted_ = true;
    return Status::Ok();
  }

  // MPI type and op for a reduction of `element_type` (f16/bf16 reduce as f32).
  MPI_Datatype TypeOf(int32_t element_type) const {
    switch (static_cast<ElementType>(element_type)) {
      case ElementType::kF32: case ElementType::kF16: case ElementType::kBF16: return api_.float32;
      case ElementType::kF64: return api_.float64;
      case ElementType::kI8: return api_.int8;
      case ElementType::kI16: return api_.int16;
      case ElementType::kI32: return api_.int32;
      case ElementType::kI64: return api_.int64;
      default: return api_.byte;
    }
  }
  MPI_Op OpOf(ReductionOp r) const {
    switch (r) {
      case ReductionOp::kSum: return api_.op_sum;
      case ReductionOp::kMax: return api_.op_max;
      case ReductionOp::kMin: return api_.op_min;
      case ReductionOp::kProd: return api_.op_prod;
    }
    return api_.op_sum;
  }

  Status RunLocked(const Operation& op, const std::string& what) {
    const int64_t element_bytes = ElementTypeByteSize(op.element_type);
    const CollectiveBytes bytes =
        CollectiveByteSizes(op.kind, op.count, element_bytes, rank(), count(), op.peer);
    const uint64_t total = op.count * (op.kind == CollectiveKind::kReduceScatter ? count() : 1);
    if (total > uint64_t(INT32_MAX) || bytes.send > uint64_t(INT32_MAX) ||
        bytes.recv > uint64_t(INT32_MAX)) {
      return InvalidArgument(what, ": ", op.count, " elements exceed MPI's int count");
    }
    const WidenedReduction wide(op, count());
    const bool widen = wide.widened();
    const void* send = wide.send();
    void* recv = wide.recv();
    // MPI forbids aliased send and recv buffers: an in-place all_reduce says MPI_IN_PLACE,
    // other overlaps (NCCL's in-place all_gather / reduce_scatter) read from a copy.
    std::vector<uint8_t> send_copy;
    const auto* s_begin = static_cast<const uint8_t*>(send);
    const auto* r_begin = static_cast<const uint8_t*>(recv);
    const uint64_t send_size = widen ? total * 4 : bytes.send;
    const uint64_t recv_size = widen ? op.count * 4 : bytes.recv;
    if (send != nullptr && recv != nullptr && s_begin < r_begin + recv_size &&
        r_begin < s_begin + send_size && op.kind != CollectiveKind::kBroadcast) {
      if (op.kind == CollectiveKind::kAllReduce && send == recv) {
        send = MPI_IN_PLACE;
      } else {
        send_copy.assign(s_begin, s_begin + send_size);
        send = send_copy.data();
      }
    }
    MPI_Datatype type = CollectiveReduces(op.kind) ? TypeOf(op.element_type) : api_.byte;
    const int n = CollectiveReduces(op.kind) ? int(op.count) : int(op.count * element_bytes);
    MPI_Request request = nullptr;
    int rc = MPI_SUCCESS;
    switch (op.kind) {
      case CollectiveKind::kAllReduce:
        rc = api_.MPI_Iallreduce(send, recv, n, type, OpOf(op.reduction), data_, &request);
        break;
      case CollectiveKind::kAllGather:
        rc = api_.MPI_Iallgather(send, n, type, recv, n, type, data_, &request);
        break;
      case CollectiveKind::kReduceScatter:
        rc = api_.MPI_Ireduce_scatter_block(send, recv, n, type, OpOf(op.reduction), data_,
                                            &request);
        break;
      case CollectiveKind::kBroadcast:
        if (rank() == op.peer && send != recv) std::memcpy(recv, send, bytes.recv);
        rc = api_.MPI_Ibcast(recv, n, type, op.peer, data_, &request);
        break;
      case CollectiveKind::kSend:
        rc = api_.MPI_Isend(send, n, type, op.peer, 0, data_, &request);
        break;
      case CollectiveKind::kRecv:
        rc = api_.MPI_Irecv(recv, n, type, op.peer, 0, data_, &request);
        break;
    }
    if (rc != MPI_SUCCESS) return Internal(what, ": ", MpiErrorText(api_, rc));
    HEXIR_RETURN_IF_ERROR(Await(request, what));
    wide.NarrowResult();
    return Status::Ok();
  }

  // Polls `request` (and the failure notices) until it completes, a peer fails, or the
  // timeout passes. Spins briefly, then sleeps in short slices (MPI progresses inside Test).
  Status Await(MPI_Request& request, const std::string& what) {
    const auto start = std::chrono::steady_clock::now();
    const auto deadline = start + timeout();
    for (uint64_t polls = 0;; ++polls) {
      int done = 0;
      int rc = api_.MPI_Test(&request, &done, MPI_STATUS_IGNORE);
      if (rc != MPI_SUCCESS) return Internal(what, ": ", MpiErrorText(api_, rc));
      if (done) return Status::Ok();
      int noticed = 0;
      api_.MPI_Test(&notice_request_, &noticed, MPI_STATUS_IGNORE);
      if (noticed) {
        return PeerFailed(what, std::string_view(notice_.data(), strnlen(notice_.data(), notice_.size())));
      }
      auto now = std::chrono::steady_clock::now();
      if (now >= deadline) return TimedOut(what, std::chrono::duration<double>(now - start).count());
      if (polls > 1000) std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

  // Sends the notice (at most kNoticeBytes - 1 bytes of it) on the notices communicator.
  void NotifyPeers(const std::string& notice) override {
    const size_t bytes = std::min(notice.size(), kNoticeBytes - 1);
    outgoing_notice_.assign(notice.begin(), notice.begin() + bytes);
    outgoing_notice_.push_back('\0');
    for (int peer = 0; peer < count(); ++peer) {
      if (peer == rank()) continue;
      MPI_Request r;
      if (api_.MPI_Isend(outgoing_notice_.data(), int(outgoing_notice_.size()), api_.byte, peer,
                         kNoticeTag, notices_, &r) == MPI_SUCCESS) {
        api_.MPI_Request_free(&r);
      }
    }
  }

  const MpiApi& api_;
  MPI_Comm data_;
  MPI_Comm notices_;
  std::vector<char> notice_ = std::vector<char>(kNoticeBytes, '\0');
  // MPI_REQUEST_NULL is an object of libmpi (not linked): a flag says whether it is posted.
  MPI_Request notice_request_ = nullptr;
  bool notice_posted_ = false;
  std::vector<char> outgoing_notice_;
};

}  // namespace

bool LaunchedByMpirun() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMIX_RANK") != nullptr;
}

StatusOr<vm::Ref<HostChannel>> CreateMpiChannel(std::chrono::nanoseconds timeout) {
  HEXIR_ASSIGN_OR_RETURN(const MpiApi* api, LoadMpiApi());
  std::lock_guard<std::mutex> lock(MpiLock());
  MPI_Comm data = nullptr, notices = nullptr;
  int rc = api->MPI_Comm_dup(api->comm_world, &data);
  if (rc == MPI_SUCCESS) rc = api->MPI_Comm_dup(api->comm_world, &notices);
  if (rc != MPI_SUCCESS) {
    return Unavailable("mpi channel: MPI_Comm_dup failed: ", MpiErrorText(*api, rc));
  }
  api->MPI_Comm_set_errhandler(data, api->errors_return);
  api->MPI_Comm_set_errhandler(notices, api->errors_return);
  return vm::Ref<HostChannel>(vm::MakeRef<MpiChannel>(*api, data, notices, timeout));
}

}  // namespace hexir::hal::cpu
