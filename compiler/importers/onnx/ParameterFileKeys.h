// The GGUF metadata keys and value of a Hexir parameter file (ParameterFile.h), spelled once for
// its writer (hexir-import --parameters) and its reader (tools/common/parameter_file.h).
// Header-only, MLIR- and protobuf-free.
#pragma once

namespace hexir::importers::onnx {
// `general.architecture` of a parameter file (GGUF's key; a llama checkpoint names its model).
inline constexpr char kParameterFileArchitecture[] = "hexir.parameters";
// The entry function's name (string).
inline constexpr char kParameterFileEntryKey[] = "hexir.entry";
// The entry argument index of the first parameter (uint32; the graph inputs come before).
inline constexpr char kParameterFileFirstArgumentKey[] = "hexir.first_argument";
}  // namespace hexir::importers::onnx
