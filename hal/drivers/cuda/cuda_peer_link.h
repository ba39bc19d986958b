// Internal to the CUDA driver: what the driver says about two GPUs of this process, for
// Device::PeerLinkTo (hal/topology.h DescribeLink, `hexir-run --list-devices`, `hexir.devices()`),
// and how a copy between two CUDA devices runs (Device::QueuePeerCopy, hal/device_transfer.h).
//
//   access  cuDeviceCanAccessPeer(device, peer)
//   nvlink  the pair has peer access and its link carries every CUDA atomic natively
//           (cuDeviceGetP2PAttribute NATIVE_ATOMIC_SUPPORTED): the driver API has no link-type
//           attribute, and native atomics between peers exist over NVLink (and NVSwitch), not
//           over PCIe, so this is the driver's own word for NVLink.
//
// A query that fails counts as "no" (the pair then shows as PCIe without peer access, which
// is how transfers between them run).
//
// Copies between two CUDA devices (ChoosePeerCopy), on the target's transfer stream:
//   one context (two logical devices of one GPU)  cuMemcpyDtoDAsync
//   two GPUs with peer access both ways           cuMemcpyPeerAsync, after peer access was
//                                                 enabled both ways (cuCtxEnablePeerAccess,
//                                                 once per pair per process: EnablePeerAccess)
//   two GPUs without                              none: the generic queue copy on the target
//                                                 (cuMemcpyAsync, which the driver stages
//                                                 through host memory)
// HEXIR_CUDA_PEER_COPY=force (read when a device is created) makes two logical devices of one
// GPU copy with cuMemcpyPeerAsync too, so that the path two peer GPUs take runs on a machine
// of one GPU (tests; nothing to enable within one context).
//
// Thread-safety: thread-safe (CUDA is; the enabled pairs are kept under a lock).
#pragma once

#include "base/status.h"
#include "hal/device.h"
#include "hal/drivers/cuda/cuda_api.h"

namespace hexir::hal::cuda {

// The link from the two driver answers (nonzero = yes).
Device::PeerLink PeerLinkFromAttributes(int can_access_peer, int native_atomics);

// Asks the driver about device -> peer (two different CUdevices).
Device::PeerLink QueryPeerLink(const CudaApi& api, CUdevice device, CUdevice peer);

enum class PeerCopy {
  kNone,            // no direct path: the caller takes the generic one
  kDeviceToDevice,  // one context: cuMemcpyDtoDAsync
  kPeer,            // cuMemcpyPeerAsync (peer access enabled first across two GPUs)
};
// How a copy from the source device to the target device runs: `same_context` (two logical
// devices of one GPU), what each driver reports towards the other (`to_from`: the target
// reaching the source; `from_to`: the reverse; both must have access), `force`
// (HEXIR_CUDA_PEER_COPY=force).
PeerCopy ChoosePeerCopy(bool same_context, Device::PeerLink to_from, Device::PeerLink from_to,
                        bool force);

// True when HEXIR_CUDA_PEER_COPY=force is set now.
bool PeerCopyForcedByEnvironment();

// Enables peer access between two contexts of different GPUs both ways (cuCtxEnablePeerAccess
// from each side; CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, e.g. by NCCL, counts as done), once
// per pair for the process: later calls return the first call's result. Leaves no context
// current that was not before (`a`'s context is current on return). An error names both GPUs.
Status EnablePeerAccess(const CudaApi& api, CUcontext a, int a_ordinal, CUcontext b, int b_ordinal);

}  // namespace hexir::hal::cuda
