#include "hal/drivers/cuda/cuda_collective_stream.h"

namespace hexir::hal::cuda {

CollectiveStream::~CollectiveStream() {
  if (stream_ == nullptr || !shared_->MakeCurrent().ok()) return;
  const CudaApi& api = *shared_->api;
  // Every launch joined its collectives on the compute stream, which outlives this.
  for (CUevent e : before_) api.cuEventDestroy(e);
  for (CUevent e : after_) api.cuEventDestroy(e);
  for (CUevent e : profile_events_) api.cuEventDestroy(e);
  api.cuStreamDestroy(stream_);
}

Status CollectiveStream::Prepare(size_t collectives) {
  if (collectives == 0) return Status::Ok();
  const CudaApi& api = *shared_->api;
  HEXIR_CUDA_RETURN_IF_ERROR(api, api.cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING),
                             "cuStreamCreate(collectives)");
  for (auto* events : {&before_, &after_}) {
    while (events->size() < collectives) {
      CUevent e = nullptr;
      HEXIR_CUDA_RETURN_IF_ERROR(api, api.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING),
                                 "cuEventCreate(collective order)");
      events->push_back(e);
    }
  }
  issued_.reserve(collectives);
  flights_.reserve(collectives);
  return Status::Ok();
}

void CollectiveStream::BeginLaunch() {
  issued_.clear();
  flights_.clear();
  joined_ = 0;
  overlapped_ = 0;
}

StatusOr<CUstream> CollectiveStream::Before(size_t index, CUstream compute, bool profiling) {
  const CudaApi& api = *shared_->api;
  HEXIR_CUDA_RETURN_IF_ERROR(api, api.cuEventRecord(before_[index], compute),
                             "cuEventRecord(before a collective)");
  HEXIR_CUDA_RETURN_IF_ERROR(api, api.cuStreamWaitEvent(stream_, before_[index], 0),
                             "cuStreamWaitEvent(collective stream)");
  if (profiling) {
    while (profile_events_.size() < 2 * before_.size()) {
      CUevent e = nullptr;
      HEXIR_CUDA_RETURN_IF_ERROR(api, api.cuEventCreate(&e, CU_EVENT_DEFAULT),
                                 "cuEventCreate(collective profiling)");
      profile_events_.push_back(e);
    }
    HEXIR_CUDA_RETURN_IF_ERROR(api, api.cuEventRecord(begin_event(index), stream_),
                               "cuEventRecord(collective profiling)");
  }
  return stream_;
}

Status CollectiveStream::After(size_t index, ByteRange send, ByteRange recv, bool profiling) {
  const CudaApi& api = *shared_->api;
  if (profiling) {
    HEXIR_CUDA_RETURN_IF_ERROR(api, api.cuEventRecord(end_event(index), stream_),
                               "cuEventRecord(collective profiling)");
  }
  HEXIR_CUDA_RETURN_IF_ERROR(api, api.cuEventRecord(after_[index], stream_),
                             "cuEventRecord(after a collective)");
  issued_.push_back(index);
  flights_.push_back({send, recv, false});
  return Status::Ok();
}

Status CollectiveStream::Wait(CUstream compute, size_t flight) {
  const CudaApi& api = *shared_->api;
  HEXIR_CUDA_RETURN_IF_ERROR(api, api.cuStreamWaitEvent(compute, after_[issued_[flight]], 0),
                             "cuStreamWaitEvent(after a collective)");
  joined_ = flight + 1;
  return Status::Ok();
}

Status CollectiveStream::OrderCommand(const CommandRanges& ranges, CUstream compute) {
  size_t last = SIZE_MAX;
  for (size_t i = joined_; i < flights_.size(); ++i) {
    if (DependsOnCollective(ranges, flights_[i].send, flights_[i].recv)) last = i;
  }
  if (last != SIZE_MAX) HEXIR_RETURN_IF_ERROR(Wait(compute, last));
  for (size_t i = joined_; i < flights_.size(); ++i) {
    if (!flights_[i].overlapped) ++overlapped_;
    flights_[i].overlapped = true;
  }
  return Status::Ok();
}

Status CollectiveStream::Join(CUstream compute) {
  if (!in_flight()) return Status::Ok();
  return Wait(compute, flights_.size() - 1);
}

}  // namespace hexir::hal::cuda
