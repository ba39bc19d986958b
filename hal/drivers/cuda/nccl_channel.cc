#include "hal/drivers/cuda/nccl_channel.h"

#include <cstdlib>

#include "hal/element_type.h"

namespace hexir::hal::cuda {
namespace {

// NCCL's type for `element_type` in a reduction; byte-moving collectives move ncclInt8.
bool ReductionType(int32_t element_type, ncclDataType_t* type) {
  switch (static_cast<ElementType>(element_type)) {
    case ElementType::kF32: *type = ncclFloat32; return true;
    case ElementType::kF64: *type = ncclFloat64; return true;
    case ElementType::kF16: *type = ncclFloat16; return true;
    case ElementType::kBF16: *type = ncclBfloat16; return true;
    case ElementType::kI8: *type = ncclInt8; return true;
    case ElementType::kI32: *type = ncclInt32; return true;
    case ElementType::kI64: *type = ncclInt64; return true;
    default: return false;
  }
}

ncclRedOp_t RedOp(ReductionOp op) {
  switch (op) {
    case ReductionOp::kSum: return ncclSum;
    case ReductionOp::kMax: return ncclMax;
    case ReductionOp::kMin: return ncclMin;
    case ReductionOp::kProd: return ncclProd;
  }
  return ncclSum;
}

bool LaunchedAsRanks() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMIX_RANK") != nullptr ||
         (std::getenv("RANK") != nullptr && std::getenv("WORLD_SIZE") != nullptr);
}

}  // namespace

NcclChannel::NcclChannel(const NcclApi& api, std::shared_ptr<CudaShared> shared, ncclComm_t comm,
                         int32_t rank, int32_t count, std::chrono::nanoseconds timeout)
    : Channel(rank, count, timeout), api_(api), shared_(std::move(shared)), comm_(comm) {
  watchdog_ = std::thread([this] { WatchdogMain(); });
}

NcclChannel::~NcclChannel() {
  bool aborted;
  {
    MutexLock lock(mu_);
    stopping_ = true;
    aborted = aborted_;
  }
  cv_.notify_all();
  watchdog_.join();
  if (!aborted) api_.ncclCommDestroy(comm_);
}

Status NcclChannel::CheckSupported(CollectiveKind kind, int32_t element_type) {
  ncclDataType_t type;
  if (CollectiveReduces(kind) && !ReductionType(element_type, &type)) {
    return InvalidArgument(CollectiveName(kind), ": NCCL cannot reduce ",
                           ElementTypeName(element_type), " values");
  }
  return Status::Ok();
}

Status NcclChannel::Issue(const Operation& op, CUstream stream) {
  HEXIR_RETURN_IF_ERROR(failure());
  HEXIR_RETURN_IF_ERROR(CheckSupported(op.kind, op.element_type));
  const void* send = reinterpret_cast<const void*>(op.send);
  void* recv = reinterpret_cast<void*>(op.recv);
  ncclDataType_t type = ncclInt8;
  size_t n = op.count * ElementTypeByteSize(op.element_type);  // bytes, for moving collectives
  if (CollectiveReduces(op.kind)) {
    ReductionType(op.element_type, &type);
    n = op.count;
  }
  ncclResult_t r = ncclSuccess;
  switch (op.kind) {
    case CollectiveKind::kAllReduce:
      r = api_.ncclAllReduce(send, recv, n, type, RedOp(op.reduction), comm_, stream);
      break;
    case CollectiveKind::kAllGather:
      r = api_.ncclAllGather(send, recv, n, type, comm_, stream);
      break;
    case CollectiveKind::kReduceScatter:
      r = api_.ncclReduceScatter(send, recv, n, type, RedOp(op.reduction), comm_, stream);
      break;
    case CollectiveKind::kBroadcast:
      r = api_.ncclBroadcast(send, recv, n, type, op.peer, comm_, stream);
      break;
    case CollectiveKind::kSend:
      r = api_.ncclSend(send, n, type, op.peer, comm_, stream);
      break;
    case CollectiveKind::kRecv:
      r = api_.ncclRecv(recv, n, type, op.peer, comm_, stream);
      break;
  }
  return NcclStatus(api_, r, StrCat(CollectiveName(op.kind), " on the ", Describe()));
}

Status NcclChannel::Track(CUstream stream, CollectiveKind first, uint64_t collectives) {
  const CudaApi& cuda = *shared_->api;
  CUevent event = nullptr;
  HEXIR_CUDA_RETURN_IF_ERROR(cuda, cuda.cuEventCreate(&event, CU_EVENT_DISABLE_TIMING),
                             "cuEventCreate(nccl watchdog)");
  CUresult r = cuda.cuEventRecord(event, stream);
  if (r != CUDA_SUCCESS) {
    cuda.cuEventDestroy(event);
    return CudaStatus(cuda, r, "cuEventRecord(nccl watchdog)");
  }
  {
    MutexLock lock(mu_);
    pending_.push_back({event, std::chrono::steady_clock::now(),
                        StrCat(CollectiveName(first), " (collective #", sequence_ + 1, " on the ",
                               Describe(), ")")});
    sequence_ += collectives;
  }
  cv_.notify_all();
  return Status::Ok();
}

Status NcclChannel::failure() const {
  MutexLock lock(mu_);
  return failure_;
}

void NcclChannel::Abandon(const Status& why) {
  MutexLock lock(mu_);
  if (failure_.ok()) AbortLocked(Aborted(Describe(), " was abandoned: ", why.message()));
}

void NcclChannel::AbortLocked(Status why) {
  failure_ = std::move(why);
  if (!aborted_) {
    aborted_ = true;
    api_.ncclCommAbort(comm_);  // the stream's NCCL kernels return; the events complete
  }
}

void NcclChannel::WatchdogMain() {
  (void)shared_->MakeCurrent();
  const CudaApi& cuda = *shared_->api;
  MutexLock lock(mu_);
  while (true) {
    cv_.wait_for(lock.native(), std::chrono::milliseconds(5),
                 [&]() REQUIRES(mu_) { return stopping_ || !pending_.empty(); });
    if (stopping_ && pending_.empty()) return;
    while (!pending_.empty()) {
      Pending& p = pending_.front();
      CUresult r = cuda.cuEventQuery(p.event);
      if (r == CUDA_ERROR_NOT_READY) {
        const auto waited = std::chrono::steady_clock::now() - p.start;
        ncclResult_t async = ncclSuccess;
        if (!aborted_) api_.ncclCommGetAsyncError(comm_, &async);
        if (async != ncclSuccess && async != ncclInProgress) {
          const char* text = api_.ncclGetErrorString(async);
          AbortLocked(Aborted(p.what, ": NCCL reported ", text ? text : "an error",
                              " (a peer rank failed or left?)"));
        } else if (waited >= timeout() && failure_.ok()) {
          AbortLocked(DeadlineExceeded(
              p.what, ": timed out after ", std::chrono::duration<double>(waited).count(),
              " s waiting for its peers (a rank died, hangs, or recorded a different "
              "collective; HEXIR_COLLECTIVE_TIMEOUT sets the limit); the communicator was "
              "aborted"));
        }
        if (!stopping_) break;  // not reached yet: look again in 5 ms
      }
      cuda.cuEventDestroy(p.event);
      pending_.pop_front();
    }
  }
}

StatusOr<std::vector<vm::Ref<Channel>>> CreateNcclChannels(
    const std::vector<std::shared_ptr<CudaShared>>& devices) {
  HEXIR_ASSIGN_OR_RETURN(const NcclApi* api, LoadNcclApi());
  const int32_t local = int32_t(devices.size());
  int32_t first = 0, world = local;
  ncclUniqueId id{};
  if (LaunchedAsRanks()) {  // rank 0's id reaches every process through the host channel
    HEXIR_ASSIGN_OR_RETURN(vm::Ref<HostChannel> host, CreateHostChannel());
    first = host->rank() * local;
    world = host->count() * local;
    if (host->rank() == 0) {
      HEXIR_RETURN_IF_ERROR(NcclStatus(*api, api->ncclGetUniqueId(&id), "ncclGetUniqueId"));
    }
    HostChannel::Operation op;
    op.kind = CollectiveKind::kBroadcast;
    op.element_type = int32_t(ElementType::kI8);
    op.count = sizeof(id);
    op.peer = 0;
    op.send = &id;
    op.recv = &id;
    HEXIR_RETURN_IF_ERROR(host->Run(op).WithContext("nccl channel: exchanging the unique id"));
  } else {
    HEXIR_RETURN_IF_ERROR(NcclStatus(*api, api->ncclGetUniqueId(&id), "ncclGetUniqueId"));
  }
  std::vector<ncclComm_t> comms(local, nullptr);
  ncclResult_t r = api->ncclGroupStart();
  for (int32_t i = 0; i < local && r == ncclSuccess; ++i) {
    HEXIR_RETURN_IF_ERROR(devices[i]->MakeCurrent());
    r = api->ncclCommInitRank(&comms[i], world, id, first + i);
  }
  ncclResult_t end = api->ncclGroupEnd();
  if (r == ncclSuccess) r = end;
  HEXIR_RETURN_IF_ERROR(NcclStatus(*api, r,
                                   StrCat("nccl channel: ncclCommInitRank of ranks ", first, "..",
                                          first + local - 1, " of ", world)));
  const auto timeout = DefaultCollectiveTimeout();
  std::vector<vm::Ref<Channel>> channels;
  for (int32_t i = 0; i < local; ++i) {
    channels.push_back(vm::Ref<Channel>(
        vm::MakeRef<NcclChannel>(*api, devices[i], comms[i], first + i, world, timeout)));
  }
  return channels;
}

}  // namespace hexir::hal::cuda
