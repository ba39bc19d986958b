#include "hal/drivers/cuda/cuda_peer_link.h"

namespace hexir::hal::cuda {

Device::PeerLink PeerLinkFromAttributes(int can_access_peer, int native_atomics) {
  Device::PeerLink link;
  link.access = can_access_peer != 0;
  link.nvlink = link.access && native_atomics != 0;
  return link;
}

Device::PeerLink QueryPeerLink(const CudaApi& api, CUdevice device, CUdevice peer) {
  int can_access = 0, atomics = 0;
  if (api.cuDeviceCanAccessPeer(&can_access, device, peer) != CUDA_SUCCESS) return {};
  if (can_access != 0 &&
      api.cuDeviceGetP2PAttribute(&atomics, CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED,
                                  device, peer) != CUDA_SUCCESS) {
    atomics = 0;
  }
  return PeerLinkFromAttributes(can_access, atomics);
}

}  // namespace hexir::hal::cuda
