#include "tests/fuzz/fake_hal.h"

#include <cstdint>
#include <utility>
#include <vector>

namespace hexir::fuzz {
namespace {

using vm::NativeCall;
using vm::NativeModuleState;
using vm::Ref;
using vm::RefObject;

class FakeDevice final : public RefObject {
  HEXIR_REF_TYPE(FakeDevice, "fake.device")
};
class FakeBuffer final : public RefObject {
  HEXIR_REF_TYPE(FakeBuffer, "fake.buffer")
 public:
  explicit FakeBuffer(int64_t n) : length(n) {}
  int64_t length;
};
class FakeView final : public RefObject {
  HEXIR_REF_TYPE(FakeView, "fake.buffer_view")
 public:
  Ref<FakeBuffer> buffer;
  std::vector<int64_t> dims;
};
class FakeExecutable final : public RefObject {
  HEXIR_REF_TYPE(FakeExecutable, "fake.executable")
 public:
  size_t entry_points = 0;
};
class FakeCommandBuffer final : public RefObject {
  HEXIR_REF_TYPE(FakeCommandBuffer, "fake.command_buffer")
 public:
  bool finalized = false;
  int64_t dispatches = 0;
};

struct State final : NativeModuleState {
  Ref<FakeDevice> device = vm::MakeRef<FakeDevice>();
};

constexpr int64_t kMaxBytes = int64_t{1} << 20;
constexpr size_t kMaxRank = 8;

template <typename T>
StatusOr<T*> Arg(NativeCall& call, size_t i) {
  RefObject* o = call.args[i].ref.get();
  if (T* t = vm::RefCast<T>(o)) return t;
  return InvalidArgument("argument ", i, ": expected ", T::StaticTypeName(), ", got ",
                         o ? o->type_name() : "null");
}

Status DeviceDefault(NativeModuleState& s, NativeCall& call) {
  call.results[0].ref = static_cast<State&>(s).device;
  return Status::Ok();
}
Status Allocate(NativeModuleState&, NativeCall& call) {
  HEXIR_RETURN_IF_ERROR(Arg<FakeDevice>(call, 0).status());
  int64_t n = call.args[1].bits;
  if (n < 0 || n > kMaxBytes) return ResourceExhausted("allocation of ", n, " bytes refused");
  call.results[0].ref = vm::MakeRef<FakeBuffer>(n);
  return Status::Ok();
}
Status BufferLength(NativeModuleState&, NativeCall& call) {
  HEXIR_ASSIGN_OR_RETURN(FakeBuffer * b, Arg<FakeBuffer>(call, 0));
  call.results[0].bits = b->length;
  return Status::Ok();
}
Status ViewCreate(NativeModuleState&, NativeCall& call) {
  HEXIR_ASSIGN_OR_RETURN(FakeBuffer * b, Arg<FakeBuffer>(call, 0));
  if (call.args.size() - 2 > kMaxRank) return InvalidArgument("rank above ", kMaxRank);
  auto view = vm::MakeRef<FakeView>();
  view->buffer = Ref<FakeBuffer>::Retain(b);
  for (size_t i = 2; i < call.args.size(); ++i) {
    if (call.args[i].bits < 0) return InvalidArgument("dim ", i - 2, " is negative");
    view->dims.push_back(call.args[i].bits);
  }
  call.results[0].ref = std::move(view);
  return Status::Ok();
}
Status ViewDim(NativeModuleState&, NativeCall& call) {
  HEXIR_ASSIGN_OR_RETURN(FakeView * v, Arg<FakeView>(call, 0));
  uint64_t axis = static_cast<uint64_t>(call.args[1].bits);
  if (axis >= v->dims.size()) return OutOfRange("axis ", call.args[1].bits, " of rank ", v->dims.size());
  call.results[0].bits = v->dims[axis];
  return Status::Ok();
}
Status ViewRank(NativeModuleState&, NativeCall& call) {
  HEXIR_ASSIGN_OR_RETURN(FakeView * v, Arg<FakeView>(call, 0));
  call.results[0].bits = static_cast<int64_t>(v->dims.size());
  return Status::Ok();
}
Status ViewBuffer(NativeModuleState&, NativeCall& call) {
  HEXIR_ASSIGN_OR_RETURN(FakeView * v, Arg<FakeView>(call, 0));
  call.results[0].ref = v->buffer;
  return Status::Ok();
}
Status ExecutableLookup(NativeModuleState&, NativeCall& call) {
  HEXIR_RETURN_IF_ERROR(Arg<FakeDevice>(call, 0).status());
  int64_t ordinal = call.args[1].bits;
  if (ordinal < 0) return OutOfRange("executable ordinal ", ordinal);
  HEXIR_ASSIGN_OR_RETURN(vm::ExecutableView view,
                         call.caller->executable(static_cast<size_t>(ordinal)));
  auto exe = vm::MakeRef<FakeExecutable>();
  exe->entry_points = view.entry_points.size();
  call.results[0].ref = std::move(exe);
  return Status::Ok();
}
Status CommandBufferCreate(NativeModuleState&, NativeCall& call) {
  HEXIR_RETURN_IF_ERROR(Arg<FakeDevice>(call, 0).status());
  call.results[0].ref = vm::MakeRef<FakeCommandBuffer>();
  return Status::Ok();
}
Status Dispatch(NativeModuleState&, NativeCall& call) {
  HEXIR_ASSIGN_OR_RETURN(FakeCommandBuffer * cb, Arg<FakeCommandBuffer>(call, 0));
  HEXIR_ASSIGN_OR_RETURN(FakeExecutable * exe, Arg<FakeExecutable>(call, 1));
  if (cb->finalized) return FailedPrecondition("command buffer is finalized");
  if (static_cast<uint64_t>(call.args[2].bits) >= exe->entry_points) {
    return OutOfRange("entry point ", call.args[2].bits, " of ", exe->entry_points);
  }
  for (size_t i = 7; i < call.args.size(); ++i) {
    if (call.args[i].ref) HEXIR_RETURN_IF_ERROR(Arg<FakeBuffer>(call, i).status());
  }
  ++cb->dispatches;
  return Status::Ok();
}
Status Finalize(NativeModuleState&, NativeCall& call) {
  HEXIR_ASSIGN_OR_RETURN(FakeCommandBuffer * cb, Arg<FakeCommandBuffer>(call, 0));
  cb->finalized = true;
  return Status::Ok();
}
Status Sum(NativeModuleState&, NativeCall& call) {
  uint64_t sum = 0;
  for (const vm::Variant& a : call.args) sum += static_cast<uint64_t>(a.bits);
  call.results[0].bits = static_cast<int64_t>(sum);
  return Status::Ok();
}

class FakeHal final : public vm::NativeModule {
 public:
  std::string_view name() const override { return "hal"; }
  Span<const vm::NativeFunction> functions() const override {
    static const vm::NativeFunction kFunctions[] = {
        {"hal.device.default", "_r", &DeviceDefault},
        {"hal.allocator.allocate", "ri_r", &Allocate},
        {"hal.buffer.length", "r_i", &BufferLength},
        {"hal.buffer_view.create", "ri*_r", &ViewCreate},
        {"hal.buffer_view.dim", "ri_i", &ViewDim},
        {"hal.buffer_view.rank", "r_i", &ViewRank},
        {"hal.buffer_view.buffer", "r_r", &ViewBuffer},
        {"hal.executable.lookup", "ri_r", &ExecutableLookup},
        {"hal.command_buffer.create", "r_r", &CommandBufferCreate},
        {"hal.command_buffer.dispatch", "rriiiii*", &Dispatch},
        {"hal.command_buffer.finalize", "r", &Finalize},
        {"fuzz.sum", "*_i", &Sum},
    };
    return Span<const vm::NativeFunction>(kFunctions, sizeof(kFunctions) / sizeof(kFunctions[0]));
  }
  StatusOr<std::unique_ptr<NativeModuleState>> CreateState(vm::Context&) override {
    return std::unique_ptr<NativeModuleState>(new State());
  }
};

}  // namespace

std::shared_ptr<vm::NativeModule> CreateFakeHalModule() { return std::make_shared<FakeHal>(); }

vm::Ref<vm::RefObject> MakeFakeView(std::vector<int64_t> dims) {
  auto view = vm::MakeRef<FakeView>();
  view->buffer = vm::MakeRef<FakeBuffer>(64);
  view->dims = std::move(dims);
  return view;
}

}  // namespace hexir::fuzz
