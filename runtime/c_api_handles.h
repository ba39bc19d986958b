// The C API's handle types and error helpers (runtime/hexir_runtime.h), shared by the files
// that implement it (hexir_runtime.cc, hexir_rank_group.cc). Internal: not installed.
//
// Each C handle is a small heap wrapper around a refcounted C++ object (Ref<T>), so handing a
// view out twice gives two handles that each own one count; releasing one never invalidates
// the other. Errors are kept per thread for hexir_last_error().
#pragma once

#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "hal/api.h"
#include "runtime/hexir_runtime.h"
#include "tools/common/parameter_file.h"
#include "vm/api.h"
#include "vm/module.h"

struct hexir_instance {
  int unused = 0;  // room for driver options; no state is needed yet
};
struct hexir_device {
  hexir::vm::Ref<hexir::hal::Device> device;
};
struct hexir_module {
  hexir::vm::Ref<hexir::vm::Module> module;
  std::string name;
};
struct hexir_context {
  std::vector<hexir::vm::Ref<hexir::hal::Device>> devices;  // by module device ordinal
  std::unique_ptr<hexir::vm::Context> context;
};
struct hexir_function {
  hexir::vm::Function function;
  hexir::vm::Ref<hexir::vm::Module> module;  // keeps function.module valid
};
struct hexir_buffer_view {
  hexir::vm::Ref<hexir::hal::BufferView> view;
};
struct hexir_parameters {
  std::unique_ptr<hexir::tools::ParameterFile> file;
  std::mutex mu;  // guards uploaded
  std::map<hexir::hal::Device*, std::pair<hexir::vm::Ref<hexir::hal::Device>,
                                          std::vector<hexir::vm::Ref<hexir::hal::BufferView>>>>
      uploaded;  // by device (the Ref keeps the key alive)
};
struct hexir_values {
  std::vector<char> kinds;  // 'i', 'f', 'r'
  std::vector<hexir::vm::Variant> values;
};

namespace hexir::runtime::c_api {

inline thread_local std::string last_error;

inline hexir_status_t Fail(const hexir::Status& status) {
  last_error = std::string(status.message());  // the code is the return value
  return static_cast<hexir_status_t>(status.code());
}
template <typename... Args>
inline hexir_status_t Fail(hexir::StatusCode code, const Args&... args) {
  return Fail(hexir::Status(code, hexir::StrCat(args...)));
}
#define HEXIR_C_REQUIRE(cond, what) \
  if (!(cond)) return ::hexir::runtime::c_api::Fail(::hexir::StatusCode::kInvalidArgument, __func__, ": ", what)

// Refuses a NULL pointer argument, naming it: "hexir_device_create: null uri".
#define HEXIR_C_NONNULL(arg) HEXIR_C_REQUIRE((arg) != nullptr, "null " #arg)

// Last resort around every status-returning entry point: an exception escaping the C++ layers
// (std::bad_alloc for a huge buffer, std::system_error when a thread cannot start) becomes a
// status naming the function; it never unwinds into the C caller (which would terminate it).
inline hexir_status_t FailFromException(const char* function) {
  try {
    throw;
  } catch (const std::bad_alloc&) {
    return Fail(hexir::StatusCode::kResourceExhausted, function, ": out of memory");
  } catch (const std::exception& e) {
    return Fail(hexir::StatusCode::kInternal, function, ": uncaught exception: ", e.what());
  } catch (...) {
    return Fail(hexir::StatusCode::kInternal, function, ": uncaught exception of unknown type");
  }
}
#define HEXIR_C_GUARD_BEGIN try {
#define HEXIR_C_GUARD_END \
  }                       \
  catch (...) {           \
    return ::hexir::runtime::c_api::FailFromException(__func__); \
  }

// Ok when `args` match `fn`'s argument kinds (count and each kind), else a failure naming the
// function, the argument and both kinds.
hexir_status_t CheckArgumentKinds(const vm::Function& fn, const hexir_values_t& args);

}  // namespace hexir::runtime::c_api
