// Internal to the CUDA driver: what the driver says about two GPUs of this process, for
// Device::PeerLinkTo (hal/topology.h DescribeLink, `hexir-run --list-devices`, `hexir.devices()`).
//
//   access  cuDeviceCanAccessPeer(device, peer)
//   nvlink  the pair has peer access and its link carries every CUDA atomic natively
//           (cuDeviceGetP2PAttribute NATIVE_ATOMIC_SUPPORTED): the driver API has no link-type
//           attribute, and native atomics between peers exist over NVLink (and NVSwitch), not
//           over PCIe, so this is the driver's own word for NVLink.
//
// A query that fails counts as "no" (the pair then shows as PCIe without peer access, which
// is how transfers between them run). Thread-safety: thread-safe (CUDA is).
#pragma once

#include "hal/device.h"
#include "hal/drivers/cuda/cuda_api.h"

namespace hexir::hal::cuda {

// The link from the two driver answers (nonzero = yes).
Device::PeerLink PeerLinkFromAttributes(int can_access_peer, int native_atomics);

// Asks the driver about device -> peer (two different CUdevices).
Device::PeerLink QueryPeerLink(const CudaApi& api, CUdevice device, CUdevice peer);

}  // namespace hexir::hal::cuda
