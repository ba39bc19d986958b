// hexir.load and hexir.Module (hexir.Function and hexir.Future: function.h).
//
// A Module owns a VM context bound to one shared device (devices.h, module_state.h). A vm::Context runs one
// invocation at a time, so every call of a module takes its mutex; the GIL is released for the
// whole invocation and every wait. async_ calls run, in submission order, on one worker thread
// per module, started on first use; their arguments are converted on the calling thread.
// close() waits for queued async calls, then drops the context (globals, loaded executables);
// tensors already returned stay valid (they retain their buffers and device). `module.f` and
// `module["f"]` return the same hexir.Function object every time (made on first use; the
// attribute is cached in the module's __dict__).
#pragma once

#include <pybind11/pybind11.h>

namespace hexir::python {

void BindModule(pybind11::module_& m);

}  // namespace hexir::python
