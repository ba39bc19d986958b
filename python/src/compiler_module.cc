// hexir._compiler: hexir.compile and hexir.import_model, the same pipeline functions as
// hexir-compile (compiler/Pipeline.h) and hexir-import (compiler/importers/ImportModel.h).
// Links libMLIR; `import hexir` loads it only when one of them is first called.
//
// Both return a result object instead of raising, so that the Python side builds its own
// exception (hexir.CompileError with .diagnostics); the GIL is released while they run.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <mutex>
#include <string>
#include <vector>

#include "compiler/Pipeline.h"
#include "compiler/importers/ImportModel.h"
#include "llvm/Support/SourceMgr.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

namespace py = pybind11;

namespace hexir::python {
namespace {

struct Diagnostic {
  std::string severity;  // "error", "warning", "note", "remark"
  std::string location;  // "file:line:col" (or MLIR's spelling of a fused/unknown location)
  std::string message;
};

struct CompileResult {
  bool ok = false;
  py::bytes vmfb;
  std::vector<Diagnostic> diagnostics;
};

const char* SeverityName(mlir::DiagnosticSeverity s) {
  switch (s) {
    case mlir::DiagnosticSeverity::Error: return "error";
    case mlir::DiagnosticSeverity::Warning: return "warning";
    case mlir::DiagnosticSeverity::Note: return "note";
    case mlir::DiagnosticSeverity::Remark: return "remark";
  }
  return "error";
}

std::string LocationText(mlir::Location loc) {
  if (auto file = mlir::dyn_cast<mlir::FileLineColLoc>(loc))
    return (file.getFilename().str() + ":" + std::to_string(file.getLine()) + ":" +
            std::to_string(file.getColumn()));
  std::string text;
  llvm::raw_string_ostream os(text);
  loc.print(os);
  return text;
}

// One CompileOptions field per keyword of hexir.compile(**flags).
struct Flag {
  const char* name;
  void (*set)(compiler::CompileOptions&, py::handle);
};
const Flag kFlags[] = {
    {"cpu", [](compiler::CompileOptions& o, py::handle v) { o.cpu = v.cast<std::string>(); }},
    {"cuda_chip", [](compiler::CompileOptions& o, py::handle v) { o.cuda_chip = v.cast<std::string>(); }},
    {"cuda_features", [](compiler::CompileOptions& o, py::handle v) { o.cuda_features = v.cast<std::string>(); }},
    {"cuda_format", [](compiler::CompileOptions& o, py::handle v) { o.cuda_format = v.cast<std::string>(); }},
    {"fusion", [](compiler::CompileOptions& o, py::handle v) { o.fuse_elementwise = v.cast<bool>(); }},
    {"max_workgroups", [](compiler::CompileOptions& o, py::handle v) { o.max_workgroups = v.cast<int64_t>(); }},
    {"schedule", [](compiler::CompileOptions& o, py::handle v) { o.schedule = v.cast<std::string>(); }},
};

std::string FlagNames() {
  std::string s;
  for (const Flag& f : kFlags) s += StrCat(s.empty() ? "" : ", ", f.name);
  return s;
}

CompileResult Compile(const std::string& source, const std::string& source_name,
                      const std::string& target, py::dict flags) {
  compiler::CompileOptions options;
  options.target = target;
  for (auto [key, value] : flags) {
    std::string name = py::str(key);
    const Flag* flag = nullptr;
    for (const Flag& f : kFlags)
      if (name == f.name) flag = &f;
    if (!flag) throw py::type_error(StrCat("hexir.compile: unknown flag '", name, "' (flags: ", FlagNames(), ")"));
    flag->set(options, value);
  }
  CompileResult result;
  std::vector<uint8_t> bytes;
  {
    py::gil_scoped_release unlocked;
    static std::once_flag passes_registered;
    std::call_once(passes_registered, [] { compiler::RegisterPasses(); });
    mlir::DialectRegistry registry;
    compiler::RegisterDialects(registry);
    mlir::MLIRContext context(registry);
    context.loadAllAvailableDialects();
    mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic& d) {
      result.diagnostics.push_back({SeverityName(d.getSeverity()), LocationText(d.getLocation()), d.str()});
      for (mlir::Diagnostic& note : d.getNotes())
        result.diagnostics.push_back({"note", LocationText(note.getLocation()), note.str()});
      return mlir::success();
    });
    llvm::SourceMgr sources;
    sources.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(source, source_name), llvm::SMLoc());
    mlir::OwningOpRef<mlir::ModuleOp> module = mlir::parseSourceFile<mlir::ModuleOp>(sources, &context);
    result.ok = module && mlir::succeeded(compiler::CompileModule(*module, options, &bytes));
  }
  if (result.ok) result.vmfb = py::bytes(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  return result;
}

// (mlir_text, None) or (None, (code, message)).
py::tuple ImportModel(const std::string& path, py::dict options_dict) {
  compiler::ImportModelOptions options;
  for (auto [key, value] : options_dict) {
    std::string name = py::str(key);
    if (name == "format") options.format = value.cast<std::string>();
    else if (name == "entry") options.entry = value.cast<std::string>();
    else if (name == "cache_len") options.cache_len = value.cast<int64_t>();
    else if (name == "weights") options.weights = value.cast<std::string>();
    else if (name == "kv_cache") options.kv_cache = value.cast<std::string>();
    else if (name == "decode_chunk") {
      options.decode_chunk = value.cast<int64_t>();
      options.host_loop = true;  // chunks asked for: the chunked loop even for a small model (as hexir-import)
    }
    else if (name == "parameters") options.parameters = py::str(py::module_::import("os").attr("fspath")(value));
    else if (name == "parameter_threshold") options.parameter_threshold = value.cast<int64_t>();
    else
      throw py::type_error(StrCat("hexir.import_model: unknown option '", name,
                                  "' (options: format, entry, cache_len, weights, kv_cache, decode_chunk, "
                                  "parameters, parameter_threshold)"));
  }
  StatusOr<std::string> text = InvalidArgument("not run");
  {
    py::gil_scoped_release unlocked;
    text = compiler::ImportModelFile(path, options);
  }
  if (!text.ok()) return py::make_tuple(py::none(), py::make_tuple(StatusCodeName(text.status().code()), text.status().message()));
  return py::make_tuple(py::str(*text), py::none());
}

}  // namespace
}  // namespace hexir::python

PYBIND11_MODULE(_compiler, m) {
  using namespace hexir::python;
  m.doc() = "Hexir compiler entry points (libMLIR); use hexir.compile / hexir.import_model.";
  py::class_<Diagnostic>(m, "Diagnostic")
      .def_readonly("severity", &Diagnostic::severity)
      .def_readonly("location", &Diagnostic::location)
      .def_readonly("message", &Diagnostic::message)
      .def("__str__", [](const Diagnostic& d) { return d.location + ": " + d.severity + ": " + d.message; })
      .def("__repr__", [](const Diagnostic& d) {
        return "hexir.Diagnostic(" + d.severity + ", '" + d.location + "', '" + d.message + "')";
      });
  py::class_<CompileResult>(m, "CompileResult")
      .def_readonly("ok", &CompileResult::ok)
      .def_readonly("vmfb", &CompileResult::vmfb)
      .def_readonly("diagnostics", &CompileResult::diagnostics);
  m.def("compile", &Compile, py::arg("source"), py::arg("source_name"), py::arg("target"), py::arg("flags"));
  m.def("import_model", &ImportModel, py::arg("path"), py::arg("options"));
}
