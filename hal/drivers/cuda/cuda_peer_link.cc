#include "hal/drivers/cuda/cuda_peer_link.h"

#include <cstdlib>
#include <map>
#include <string_view>
#include <utility>

#include "base/mutex.h"

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

PeerCopy ChoosePeerCopy(bool same_context, Device::PeerLink to_from, Device::PeerLink from_to,
                        bool force) {
  if (same_context) return force ? PeerCopy::kPeer : PeerCopy::kDeviceToDevice;
  return to_from.access && from_to.access ? PeerCopy::kPeer : PeerCopy::kNone;
}

bool PeerCopyForcedByEnvironment() {
  const char* env = std::getenv("HEXIR_CUDA_PEER_COPY");
  return env != nullptr && std::string_view(env) == "force";
}

namespace {

// Access from the current context to `peer`; already enabled counts as done.
CUresult EnableFromCurrent(const CudaApi& api, CUcontext peer) {
  CUresult r = api.cuCtxEnablePeerAccess(peer, 0);
  return r == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED ? CUDA_SUCCESS : r;
}

// The pairs of contexts (unordered) whose peer access was enabled, or failed to be: a failure
// is kept, not retried per copy.
class PeerAccessRegistry {
 public:
  static PeerAccessRegistry& Process() {
    static PeerAccessRegistry* registry = new PeerAccessRegistry();  // contexts outlive statics
    return *registry;
  }
  Status Enable(const CudaApi& api, CUcontext a, int a_ordinal, CUcontext b, int b_ordinal) {
    const auto key = a < b ? std::make_pair(a, b) : std::make_pair(b, a);
    MutexLock lock(mu_);
    if (auto it = results_.find(key); it != results_.end()) return it->second;
    Status status;
    auto enable = [&](CUcontext from, int from_ordinal, CUcontext to, int to_ordinal) {
      if (!status.ok()) return;
      CUresult r = api.cuCtxSetCurrent(from);
      if (r == CUDA_SUCCESS) r = EnableFromCurrent(api, to);
      if (r != CUDA_SUCCESS) {
        status = CudaStatus(api, r, StrCat("cuCtxEnablePeerAccess(cuda:", from_ordinal,
                                           " -> cuda:", to_ordinal, ")"));
      }
    };
    enable(b, b_ordinal, a, a_ordinal);
    enable(a, a_ordinal, b, b_ordinal);
    (void)api.cuCtxSetCurrent(a);
    results_.emplace(key, status);
    return status;
  }

 private:
  Mutex mu_;
  std::map<std::pair<CUcontext, CUcontext>, Status> results_ GUARDED_BY(mu_);
};

}  // namespace

Status EnablePeerAccess(const CudaApi& api, CUcontext a, int a_ordinal, CUcontext b,
                        int b_ordinal) {
  return PeerAccessRegistry::Process().Enable(api, a, a_ordinal, b, b_ordinal);
}

}  // namespace hexir::hal::cuda
