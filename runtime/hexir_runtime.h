/* Hexir runtime: the C embedding API (C89-compatible header, no other includes needed
 * beyond <stddef.h> and <stdint.h>).
 *
 *   instance -> device (by URI) -> context (device + HAL) -> load module (file / memory)
 *   -> look up function -> call with a value list (i64, f64, buffer views) -> read results.
 *
 * Status: every fallible function returns a hexir_status_t; HEXIR_OK (0) is success. The
 * message of the most recent failure on the calling thread is hexir_last_error(), e.g.
 * "function 'main' @12: kaboom" (valid until the next failing call on that thread). On failure, out-parameters are left untouched.
 *
 * Ownership: every handle a `*_create`, `*_load_*`, `*_lookup_*` or getter with "retain" in
 * its contract returns is owned by the caller and must be given back with the matching
 * `*_release`. Releasing NULL is a no-op. Handles are refcounted internally: releasing a
 * device or module that a context still uses is safe (the context keeps its own reference).
 * A function handle is valid for calls on the context it was looked up in.
 *
 * Thread-safety: instances, devices, modules and buffer views may be used from any thread.
 * A context (and the functions looked up in it) is used by one thread at a time, with one
 * exception: hexir_context_cancel may be called from any thread while another thread calls
 * into the context (not concurrently with hexir_context_release).
 */
#ifndef HEXIR_RUNTIME_H_
#define HEXIR_RUNTIME_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Status codes (same numbering as hexir::StatusCode). */
typedef enum hexir_status_e {
  HEXIR_OK = 0,
  HEXIR_INVALID_ARGUMENT = 1,
  HEXIR_NOT_FOUND = 2,
  HEXIR_OUT_OF_RANGE = 3,
  HEXIR_FAILED_PRECONDITION = 4,
  HEXIR_RESOURCE_EXHAUSTED = 5,
  HEXIR_UNAVAILABLE = 6,
  HEXIR_DATA_LOSS = 7,
  HEXIR_UNIMPLEMENTED = 8,
  HEXIR_DEADLINE_EXCEEDED = 9,
  HEXIR_ABORTED = 10,
  HEXIR_INTERNAL = 11
} hexir_status_t;

/* Element types of buffer views (the codes of hal/element_types.def; hexir_runtime.cc checks each). */
typedef enum hexir_element_type_e {
  HEXIR_ELEMENT_F32 = 1,
  HEXIR_ELEMENT_F16 = 2,
  HEXIR_ELEMENT_BF16 = 3,
  HEXIR_ELEMENT_F64 = 4,
  HEXIR_ELEMENT_I8 = 16,
  HEXIR_ELEMENT_I16 = 17,
  HEXIR_ELEMENT_I32 = 18,
  HEXIR_ELEMENT_I64 = 19,
  HEXIR_ELEMENT_I1 = 20
} hexir_element_type_t;

/* Kinds of call arguments and results (the letters of a function signature). */
typedef enum hexir_value_kind_e {
  HEXIR_VALUE_I64 = 'i',
  HEXIR_VALUE_F64 = 'f',
  HEXIR_VALUE_REF = 'r'
} hexir_value_kind_t;

typedef struct hexir_instance hexir_instance_t;
typedef struct hexir_device hexir_device_t;
typedef struct hexir_context hexir_context_t;
typedef struct hexir_module hexir_module_t;
typedef struct hexir_function hexir_function_t;
typedef struct hexir_buffer_view hexir_buffer_view_t;
typedef struct hexir_values hexir_values_t;
typedef struct hexir_parameters hexir_parameters_t;
typedef struct hexir_rank_group hexir_rank_group_t;

/* The message of the calling thread's most recent failure ("" if none). */
const char* hexir_last_error(void);
/* "ok", "invalid_argument", ... */
const char* hexir_status_name(hexir_status_t status);

/* ---- instance ------------------------------------------------------------------------ */
hexir_status_t hexir_instance_create(hexir_instance_t** out_instance);
void hexir_instance_release(hexir_instance_t* instance);

/* ---- devices ------------------------------------------------------------------------- */
/* uri: "cpu", "cpu:inline" (work runs on the calling thread), "cpu:threads=N", "cuda", "cuda:N".
 * HEXIR_NOT_FOUND for an unknown driver, HEXIR_UNAVAILABLE when it cannot run here. */
hexir_status_t hexir_device_create(hexir_instance_t* instance, const char* uri,
                                   hexir_device_t** out_device);
void hexir_device_release(hexir_device_t* device);

/* ---- modules ------------------------------------------------------------------------- */
/* Maps the .vmfb file (rodata and kernels are used in place) and verifies it once. */
hexir_status_t hexir_module_load_file(hexir_instance_t* instance, const char* path,
                                      hexir_module_t** out_module);
/* Copies `size` bytes; the caller's buffer may be freed afterwards. */
hexir_status_t hexir_module_load_memory(hexir_instance_t* instance, const void* data,
                                        size_t size, hexir_module_t** out_module);
/* The module's name (valid while the module lives). */
const char* hexir_module_name(const hexir_module_t* module);
void hexir_module_release(hexir_module_t* module);

/* ---- contexts ------------------------------------------------------------------------ */
/* A VM context whose "hal" imports run on `device`. */
hexir_status_t hexir_context_create(hexir_instance_t* instance, hexir_device_t* device,
                                    hexir_context_t** out_context);
/* A context binding `count` devices: devices[i] runs module device ordinal i (a module
 * compiled with --target repeated, e.g. {cpu, cuda}); the context retains them. */
hexir_status_t hexir_context_create_with_devices(hexir_instance_t* instance,
                                                 hexir_device_t* const* devices, size_t count,
                                                 hexir_context_t** out_context);
/* Links the module: checks that the context binds each of its devices with a device of that
 * kind (HEXIR_INVALID_ARGUMENT naming the missing one), resolves its imports, runs its
 * initializer. */
hexir_status_t hexir_context_load_module(hexir_context_t* context, hexir_module_t* module);
void hexir_context_release(hexir_context_t* context);

/* ---- functions ----------------------------------------------------------------------- */
hexir_status_t hexir_context_lookup_function(hexir_context_t* context, const char* name,
                                             hexir_function_t** out_function);
/* "rr_r": argument kinds, '_', result kinds (see hexir_value_kind_t). Valid while fn lives. */
const char* hexir_function_signature(const hexir_function_t* function);
/* A reflection attribute ("abi.args", ...) or NULL. Valid while fn lives. */
const char* hexir_function_attr(const hexir_function_t* function, const char* key);
void hexir_function_release(hexir_function_t* function);

/* Calls `function` with `args` (must match its signature's argument kinds) and replaces the
 * contents of `results` with its results. Traps come back as errors naming the function and
 * bytecode offset.
 * Where tensor arguments live: make each argument's buffer view (hexir_buffer_view_from_host)
 * on the device that hexir_function_attr(function, "abi.arg_devices") names for it: one
 * module device ordinal per argument, ';'-separated ("1;1;0": devices[1] of
 * hexir_context_create_with_devices for the first two); without the attribute every argument
 * is on device 0. The runtime never moves an argument to its device: a view on another
 * device is refused by the HAL of the device that uses it, e.g. a CPU device's view where a
 * CUDA device's is expected: HEXIR_INVALID_ARGUMENT, "function 'main' @N: ...: not a CUDA
 * buffer" (the import and binding that met it in between). CPU devices share host memory,
 * so a view of one CPU device is accepted by another. */
hexir_status_t hexir_function_call(hexir_context_t* context, hexir_function_t* function,
                                   const hexir_values_t* args, hexir_values_t* results);

/* ---- deadlines and cancellation ------------------------------------------------------- */
#define HEXIR_NO_DEADLINE INT64_MAX
/* The clock deadlines are expressed on: CLOCK_MONOTONIC, in nanoseconds. */
int64_t hexir_clock_now_ns(void);
/* hexir_function_call with an absolute deadline (hexir_clock_now_ns() + 2000000000 for two
 * seconds; HEXIR_NO_DEADLINE for none). Past it the call stops and returns
 * HEXIR_DEADLINE_EXCEEDED, "function 'main' @12: deadline exceeded after 2.000 s" (plus the
 * call stack), whether it was running bytecode or waiting for the device; `results` is then
 * left untouched. Device work it submitted is abandoned (it finishes on the device); the
 * context stays usable for the next call. A kernel that itself never ends cannot be
 * interrupted (on CUDA it keeps the device busy). */
hexir_status_t hexir_function_call_with_deadline(hexir_context_t* context,
                                                 hexir_function_t* function,
                                                 const hexir_values_t* args,
                                                 hexir_values_t* results, int64_t deadline_ns);
/* Thread-safe: stops the call running in `context` now (if any), which then returns
 * HEXIR_ABORTED, "function 'main' @12: call cancelled", within a few milliseconds. A cancel
 * while no call runs has no effect: every call starts uncancelled. */
hexir_status_t hexir_context_cancel(hexir_context_t* context);

/* ---- value lists (arguments and results) ---------------------------------------------- */
hexir_status_t hexir_values_create(hexir_values_t** out_values);
void hexir_values_release(hexir_values_t* values);
void hexir_values_clear(hexir_values_t* values);
size_t hexir_values_size(const hexir_values_t* values);
hexir_status_t hexir_values_push_i64(hexir_values_t* values, int64_t value);
hexir_status_t hexir_values_push_f64(hexir_values_t* values, double value);
/* Retains the view (the caller keeps its own reference). */
hexir_status_t hexir_values_push_buffer_view(hexir_values_t* values,
                                             hexir_buffer_view_t* view);
/* Kind of entry `index`; HEXIR_OUT_OF_RANGE past the end. */
hexir_status_t hexir_values_kind(const hexir_values_t* values, size_t index,
                                 hexir_value_kind_t* out_kind);
hexir_status_t hexir_values_get_i64(const hexir_values_t* values, size_t index,
                                    int64_t* out_value);
hexir_status_t hexir_values_get_f64(const hexir_values_t* values, size_t index,
                                    double* out_value);
/* Retains: the caller releases *out_view. HEXIR_INVALID_ARGUMENT if the entry is not a
 * buffer view. */
hexir_status_t hexir_values_get_buffer_view(const hexir_values_t* values, size_t index,
                                            hexir_buffer_view_t** out_view);

/* ---- buffer views (tensors) ------------------------------------------------------------ */
/* Allocates a device buffer holding a copy of `data` (byte_size must equal the product of
 * dims times the element size). */
hexir_status_t hexir_buffer_view_from_host(hexir_device_t* device,
                                           hexir_element_type_t element_type,
                                           const int64_t* dims, size_t rank, const void* data,
                                           size_t byte_size, hexir_buffer_view_t** out_view);
/* Waits for the device's queued work, then copies the view's bytes into `data`;
 * HEXIR_OUT_OF_RANGE if `capacity` is smaller than hexir_buffer_view_byte_size(). */
hexir_status_t hexir_buffer_view_to_host(hexir_device_t* device, hexir_buffer_view_t* view,
                                         void* data, size_t capacity);
hexir_element_type_t hexir_buffer_view_element_type(const hexir_buffer_view_t* view);
size_t hexir_buffer_view_rank(const hexir_buffer_view_t* view);
/* Dimension `axis` (< rank), or -1 when out of range. */
int64_t hexir_buffer_view_dim(const hexir_buffer_view_t* view, size_t axis);
size_t hexir_buffer_view_byte_size(const hexir_buffer_view_t* view);
void hexir_buffer_view_release(hexir_buffer_view_t* view);

/* ---- parameter files (hexir-import model.onnx --parameters=FILE) ----------------------- */
/* Maps a parameter file: the weights hexir-import wrote outside the module text, the entry
 * function's last arguments. Errors name the path (missing, not GGUF, not a parameter file). */
hexir_status_t hexir_parameters_open(hexir_instance_t* instance, const char* path,
                                     hexir_parameters_t** out_parameters);
/* Its tensors (the ONNX initializer names, in argument order). */
size_t hexir_parameters_count(const hexir_parameters_t* parameters);
/* Name of tensor `index`, or NULL past the end. Valid while `parameters` lives. */
const char* hexir_parameters_name(const hexir_parameters_t* parameters, size_t index);
/* Appends the tensors to `values` as `function`'s last arguments, after the inputs already
 * pushed: checked against the function's reflected argument types (HEXIR_INVALID_ARGUMENT
 * naming the argument and the tensor), uploaded to `device` once (the first push for that
 * device) and reused by every later push. */
hexir_status_t hexir_values_push_parameters(hexir_values_t* values, hexir_device_t* device,
                                            hexir_function_t* function,
                                            hexir_parameters_t* parameters);
void hexir_parameters_release(hexir_parameters_t* parameters);

/* ---- rank groups: several devices as the ranks of one SPMD module ---------------------- */
/* A module that exchanges data by collectives (hexir-import --tensor-parallel=N, any program
 * with hexir.all_reduce ...) run as `count` ranks in this process: rank i runs on devices[i]
 * with a context of its own, its channel rank i of one group made for the devices (an
 * in-process Gloo group for CPU devices, NCCL for CUDA devices). Refused with
 * HEXIR_INVALID_ARGUMENT: no device, a null one, a module that uses no collectives (it is
 * not an SPMD program: use hexir_context_create) or lists several devices, a device that
 * does not suit the module (naming the rank). The group retains the module and devices. */
hexir_status_t hexir_rank_group_create(hexir_instance_t* instance, hexir_module_t* module,
                                       hexir_device_t* const* devices, size_t count,
                                       hexir_rank_group_t** out_group);
/* The number of ranks (0 for NULL). */
size_t hexir_rank_group_size(const hexir_rank_group_t* group);
/* Calls `function` on every rank at once, one thread each, rank i with rank_args[i] (its own
 * shards: buffer views made on devices[i]); `rank_args` holds hexir_rank_group_size() lists.
 * On success `results` holds rank 0's results (views on devices[0]). When a rank fails, its
 * peers blocked in a collective with it fail too (at once on CPU; elsewhere within the
 * collective timeout, HEXIR_COLLECTIVE_TIMEOUT seconds) and the call returns the first
 * failure naming its rank: "rank 1 of 2 ('cpu'): function 'main' ..."; `results` is then
 * untouched. `deadline_ns` bounds each rank's call as in hexir_function_call_with_deadline
 * (HEXIR_NO_DEADLINE for none). After a failed call the failing ranks' channels have been
 * abandoned (hal/channel.h): release the group and create another. Used by one thread at a
 * time. */
hexir_status_t hexir_rank_group_call(hexir_rank_group_t* group, const char* function,
                                     const hexir_values_t* const* rank_args,
                                     hexir_values_t* results, int64_t deadline_ns);
void hexir_rank_group_release(hexir_rank_group_t* group);

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif  /* HEXIR_RUNTIME_H_ */
