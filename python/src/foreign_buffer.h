// A hal::Buffer over memory owned by a Python object: a NumPy array or a DLPack producer's
// tensor, passed to a device that can use it without a copy (host memory on a CPU device, a
// CUDA tensor of the same GPU on a CUDA device: hal::Device::WrapExternalMemory).
//
// Ownership: the buffer holds one reference to its owner (a PyObject* or a DLManagedTensor*)
// and gives it back when the buffer dies (after the queued work using it has completed). A buffer may die on a runtime thread (a CPU queue
// thread releasing a finished submission) that does not hold the GIL; then the release is
// deferred to the interpreter (Py_AddPendingCall) instead of taking the GIL there, which could
// deadlock against a thread that holds the GIL while it waits for that queue.
// Not counted in the device's statistics: the memory is the caller's, not the device's.
#pragma once

#include <cstdint>

#include "hal/device.h"
#include "vm/ref.h"

namespace hexir::python {

// Gives `owner` back; called with the GIL held.
using ReleaseOwner = void (*)(void* owner);

// The buffer over `byte_size` bytes at `address` (in `device`'s memory space). On an error
// (the device refuses the memory) the owner has not been released: the caller still holds it.
StatusOr<vm::Ref<hal::Buffer>> WrapPythonOwnedMemory(hal::Device& device, uint64_t address,
                                                     uint64_t byte_size, void* owner,
                                                     ReleaseOwner release);

// Runs release(owner) now if this thread holds the GIL, else queues it for the interpreter.
void ReleaseUnderGil(void* owner, ReleaseOwner release);

// Runs the queued releases (call with the GIL held; the binding calls it on every call so
// that a busy loop of calls returns memory promptly even when pending calls are starved).
void RunDeferredReleases();

}  // namespace hexir::python
