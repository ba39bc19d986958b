// The slice of NCCL the CUDA driver's channel uses, resolved with dlopen at run time, like
// libcuda.so.1: no binary links NCCL, and processes that never create a CUDA channel neither
// load it nor need it. The few declarations below are NCCL 2.x's stable C ABI (nccl.h),
// carried in-tree because this machine has no NCCL package; cudaStream_t is CUstream.
// HEXIR_NCCL_LIBRARY names the library (on the H200 machine NCCL is a system library and also
// inside the PyTorch environment); default libnccl.so.2 on the loader's path.
//
// Ownership: the library is loaded once per process and never unloaded.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <string>

#include "base/status.h"

extern "C" {
typedef struct ncclComm* ncclComm_t;
#define NCCL_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;
typedef enum {
  ncclSuccess = 0, ncclUnhandledCudaError = 1, ncclSystemError = 2, ncclInternalError = 3,
  ncclInvalidArgument = 4, ncclInvalidUsage = 5, ncclRemoteError = 6, ncclInProgress = 7,
} ncclResult_t;
typedef enum {
  ncclInt8 = 0, ncclUint8 = 1, ncclInt32 = 2, ncclUint32 = 3, ncclInt64 = 4, ncclUint64 = 5,
  ncclFloat16 = 6, ncclFloat32 = 7, ncclFloat64 = 8, ncclBfloat16 = 9,
} ncclDataType_t;
typedef enum { ncclSum = 0, ncclProd = 1, ncclMax = 2, ncclMin = 3 } ncclRedOp_t;

ncclResult_t ncclGetVersion(int* version);
ncclResult_t ncclGetUniqueId(ncclUniqueId* id);
ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank);
ncclResult_t ncclCommDestroy(ncclComm_t comm);
ncclResult_t ncclCommAbort(ncclComm_t comm);
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* async_error);
const char* ncclGetErrorString(ncclResult_t result);
ncclResult_t ncclGroupStart();
ncclResult_t ncclGroupEnd();
ncclResult_t ncclAllReduce(const void* send, void* recv, size_t count, ncclDataType_t type,
                           ncclRedOp_t op, ncclComm_t comm, CUstream stream);
ncclResult_t ncclAllGather(const void* send, void* recv, size_t send_count, ncclDataType_t type,
                           ncclComm_t comm, CUstream stream);
ncclResult_t ncclReduceScatter(const void* send, void* recv, size_t recv_count,
                               ncclDataType_t type, ncclRedOp_t op, ncclComm_t comm,
                               CUstream stream);
ncclResult_t ncclBroadcast(const void* send, void* recv, size_t count, ncclDataType_t type,
                           int root, ncclComm_t comm, CUstream stream);
ncclResult_t ncclSend(const void* send, size_t count, ncclDataType_t type, int peer,
                      ncclComm_t comm, CUstream stream);
ncclResult_t ncclRecv(void* recv, size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
                      CUstream stream);
}

namespace hexir::hal::cuda {

#define HEXIR_NCCL_FUNCTIONS(X)                                                           \
  X(ncclGetVersion) X(ncclGetUniqueId) X(ncclCommInitRank) X(ncclCommDestroy)             \
  X(ncclCommAbort) X(ncclCommGetAsyncError) X(ncclGetErrorString) X(ncclGroupStart)       \
  X(ncclGroupEnd) X(ncclAllReduce) X(ncclAllGather) X(ncclReduceScatter) X(ncclBroadcast) \
  X(ncclSend) X(ncclRecv)

struct NcclApi {
#define HEXIR_NCCL_MEMBER_(name) decltype(&::name) name = nullptr;
  HEXIR_NCCL_FUNCTIONS(HEXIR_NCCL_MEMBER_)
#undef HEXIR_NCCL_MEMBER_
  int version = 0;  // ncclGetVersion, e.g. 22809
};

// Loads NCCL once per process (the result, also a failure, is kept). Unavailable names the
// library when it cannot be loaded or lacks a function.
StatusOr<const NcclApi*> LoadNcclApi();

// Ok for ncclSuccess, else "<operation>: <ncclGetErrorString> (ncclResult_t N)".
Status NcclStatus(const NcclApi& api, ncclResult_t result, std::string_view operation);

}  // namespace hexir::hal::cuda
