// The names of the discardable `hexir.*` attributes that passes, targets, the bytecode writer
// and the importers exchange: each spelled here once. MLIR-free (the llama importer writes some
// of them as text), header-only.
#pragma once

#include <string_view>

namespace hexir {
// Device placement (passes/schedule/PlaceDevices.cpp): `hexir.device = N` (an i64 index into
// the module's device list, `hexir.devices`) on an op, a function or a function argument.
inline constexpr char kDeviceAttr[] = "hexir.device";
// The module's device list: hexir.devices = ["cpu", "cuda"] (hexir-compile's --target list).
inline constexpr char kDevicesAttr[] = "hexir.devices";
// Generics that must compile to one kernel: `hexir.dispatch_group = "KIND.INSTANCE"` (an
// importer's statement, passes/dispatch/FormDispatchRegions.cpp); the region and its
// executable carry "KIND" (e.g. "decode_attention", passes/codegen/CUDADecodeAttention.h).
inline constexpr char kDispatchGroupAttr[] = "hexir.dispatch_group";
// The KIND of a group name "KIND.INSTANCE" (the whole name when it has no '.').
inline std::string_view DispatchGroupKind(std::string_view name) { return name.substr(0, name.rfind('.')); }
// Partitioning (passes/partition): `hexir.sharding = #hexir.sharding<...>` on a function
// argument, result or op.
inline constexpr char kShardingAttr[] = "hexir.sharding";
// A decode matvec, loops (n, b, j), or a prompt's M rows of them, loops (m, n, b, j), whose
// body decodes a GGUF block format: `hexir.block_matvec = "<ggml type>"` (the llama
// importer's statement; the CPU target's kernel, passes/codegen/CPUMatvecKernel.h; CUDA's
// quantized GEMV takes the one-row form).
inline constexpr char kBlockMatvecAttr[] = "hexir.block_matvec";
// An executable's target kind in a module of several targets (hexir-assign-executable-targets).
inline constexpr char kTargetAttr[] = "hexir.target";
// A public function's tensor argument that holds weights (`hexir.parameter`, a unit argument
// attribute; the importers' `--parameters` arguments, the llama importer's weights): the same
// buffer always holds the same bytes, so work that reads only parameters and constants runs
// once per buffer, not per call (hexir-lift-constant-dispatches).
inline constexpr char kParameterAttr[] = "hexir.parameter";
// A function that computes constants once per context (hexir-lift-constant-dispatches).
inline constexpr char kInitializerAttr[] = "hexir.initializer";
// An executable's cost estimate (passes/dispatch/costs), read by the placement cost model.
inline constexpr char kCostsAttr[] = "hexir.costs";
// A serialized executable (compiler/targets/*, written out by compiler/bytecode): its binary
// format ("cpu-elf-x86_64", "cuda-cubin-sm_90", "cuda-ptx"), the binary, its entry symbol, its
// string attributes (`hexir.attrs`, e.g. costs and launch sizes) and its read-only blobs.
inline constexpr char kFormatAttr[] = "hexir.format";
inline constexpr char kBinaryAttr[] = "hexir.binary";
inline constexpr char kEntryAttr[] = "hexir.entry";
inline constexpr char kExecutableAttrsAttr[] = "hexir.attrs";
inline constexpr char kRodataAttrsAttr[] = "hexir.rodata_attrs";
// hexir-fuse-small-reductions' mark (passes/dispatch/fusion/README.md): `hexir.recompute_in_consumer
// = N` (an i64; the copies of one chain share N) on a linalg op whose one user is a linalg op of
// its block says "compute me inside my user's dispatch, whatever the recomputation costs" (the
// pass that marked it judged the cost). hexir-group-small-projections groups the users of one
// chain by N; hexir-form-dispatch-regions drops the mark from the clone it makes.
inline constexpr char kRecomputeInConsumerAttr[] = "hexir.recompute_in_consumer";
// hexir-cast-matmul-activations' mark (passes/dispatch/CastMatmulActivations.cpp): a unit
// `hexir.operand_cast` on the elementwise generic rounding a matmul's f32 activations to its
// weights' f16/bf16 says "materialize me": hexir-form-dispatch-regions never recomputes it
// inside a consumer's dispatch (the tensor-core kernel reads its operands from memory).
inline constexpr char kOperandCastAttr[] = "hexir.operand_cast";
// A CPU matmul's B prepacked by hexir-cpu-pack-matmul-operands: the pack dispatch's generic is
// marked `hexir.pack_rhs`, and the matmul's kernel reads B through an unpack generic marked
// `hexir.packed_rhs` (never fused into tile loops, replaced by reading the panels in place:
// passes/codegen/CPUMatmulMicroKernel.cpp).
inline constexpr char kPackRhsAttr[] = "hexir.pack_rhs";
inline constexpr char kPackedRhsAttr[] = "hexir.packed_rhs";
// The bindings an executable's kernel writes, as hexir-convert-to-vm binds a dispatch (tensor
// operands, then results, then the parameter buffer): `hexir.written_bindings = MASK : i64`
// (bit i = binding i; bindings past 64 count as written). The bytecode writer stores it as
// ExecutableDef.entry_written_bindings, so drivers let a command that only reads a
// collective's input run beside it (hal/command_ranges.h).
inline constexpr char kWrittenBindingsAttr[] = "hexir.written_bindings";
// What hexir-compile's IR dumps print instead of a binary: its size in bytes.
inline constexpr char kBinarySizeAttr[] = "hexir.binary_size";
// A device loop (hexir-form-device-loops, passes/loops/DeviceLoops.h): on a `hexir.execute`,
// `array<i64: flag, limit>`, its body runs again while the i32 in the buffer of yielded value
// `flag` is nonzero, at most `limit` runs; hexir-convert-to-vm lowers it to
// `hal.command_buffer.repeat_while_slot` (passes/vm/LowerExecutionRegions.cpp).
inline constexpr char kRepeatWhileAttr[] = "hexir.repeat_while";
// On a func.func (hexir-form-execution-regions, passes/schedule/RecordedCalls.h): its calls
// are commands of the caller's `hexir.execute`, recorded into the caller's command buffer.
inline constexpr char kRecordsIntoCallerAttr[] = "hexir.records_into_caller";
}  // namespace hexir
