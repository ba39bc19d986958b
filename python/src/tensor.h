// hexir.Tensor: a buffer view on a device, as a function returns it or as an input uploaded
// for one. The data stays on the device until it is read (numpy(), DLPack); a read waits for
// the device's pending work, with the GIL released.
//
// Ownership: a Tensor retains its buffer view and its device. Immutable.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "hal/api.h"
#include "vm/ref.h"

namespace hexir::python {

struct Tensor {
  vm::Ref<hal::BufferView> view;
  vm::Ref<hal::Device> device;  // where view's buffer lives: reads are ordered on its queue
};

// A view of `array` for `device`: on a host-memory device a C-contiguous, aligned array is
// wrapped without a copy (the view keeps the array alive and the caller must not write it
// until the call's results are read); otherwise (and for other devices) the bytes are
// copied. Raises hexir.Error for a dtype Hexir has no element type for.
vm::Ref<hal::BufferView> ViewFromArray(hal::Device& device, pybind11::array array);

// A view of a DLPack producer (an object with __dlpack__, or a "dltensor" capsule) for
// `device`: CPU memory is wrapped without a copy on a host-memory device, copied otherwise.
// Raises for memory on another device type, non-contiguous strides or an unknown dtype.
vm::Ref<hal::BufferView> ViewFromDlpack(hal::Device& device, pybind11::handle producer);

// True for objects ViewFromDlpack accepts.
bool IsDlpackProducer(pybind11::handle object);

// The Tensor inside a hexir.Tensor object, or nullptr for any other object (one type
// compare: arguments are checked on every call). hexir.Tensor is a plain CPython type, not
// a pybind11 class: pybind11 cannot cast a Tensor; go through these two functions.
const Tensor* AsTensor(pybind11::handle object);
// A new hexir.Tensor object owning `tensor` (the per-call result path).
pybind11::object WrapTensor(Tensor tensor);

// hexir.Tensor and hexir.from_dlpack.
void BindTensor(pybind11::module_& m);

}  // namespace hexir::python
