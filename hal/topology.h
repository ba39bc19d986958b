// Device topology: what the HAL knows about a pair of devices, for tools (`hexir-run
// --list-devices`) and for choosing how a cross-device transfer runs (hal/device_transfer.h).
//
//   DeviceLink link = hal::DescribeLink(*cpu, *gpu);    // shared memory? peer access? link?
//   HEXIR_ASSIGN_OR_RETURN(double gbps, hal::MeasureCopyBandwidth(*cpu, *gpu, 64 << 20));
//
// The description comes from each device's MemorySpace (hal/device.h) and, for two GPUs, from
// what each driver reports in Device::PeerLinkTo (both directions must agree); the bandwidth is measured by timing queued transfers, so it is what
// a compiled module's transfers get. Thread-safety: as Device (every call thread-safe).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"
#include "hal/device.h"

namespace hexir::hal {

enum class LinkKind {
  kSameDevice,  // one memory (two logical devices of one GPU, or a device with itself)
  kHostMemory,  // both devices use host memory (two CPU devices)
  kPcie,        // host <-> GPU, or two GPUs without a faster link the driver reports
  kNvlink,      // two GPUs whose drivers both report their link as NVLink
};

// "same device", "host memory", "PCIe", "NVLink".
std::string_view LinkKindName(LinkKind kind);

struct DeviceLink {
  bool shared_memory = false;  // each device can use the other's buffers directly
  bool peer_access = false;    // GPU <-> GPU access without staging through the host (one
                               // GPU: always; two GPUs: both drivers report it)
  LinkKind link = LinkKind::kPcie;
};

DeviceLink DescribeLink(const Device& a, const Device& b);

// GB/s (1e9 bytes per second) of queued transfers of `bytes` from a buffer of `from` to a
// buffer of `to` (hal/device_transfer.h: the path compiled modules take), best of 3 after a
// warm-up. Fails naming the devices when a buffer cannot be allocated or a transfer fails.
StatusOr<double> MeasureCopyBandwidth(Device& from, Device& to, uint64_t bytes);

}  // namespace hexir::hal
