"""Hexir from Python: compile models, load .vmfb modules, call them with NumPy/PyTorch tensors.

    import hexir, numpy as np
    vmfb = hexir.compile("model.mlir", targets=["cpu"])       # or MLIR text; bytes out
    module = hexir.load(vmfb, devices=["cpu"])
    y = module.main(np.ones((2, 4), np.float32))              # a hexir.Tensor, still on the device
    y.numpy(); torch.from_dlpack(y)                           # read it (waits for the device)

The runtime (hexir._runtime) links no LLVM/MLIR; the compiler (hexir._compiler, libMLIR) is
imported the first time compile() or import_model() is called. python/README.md has the details.
"""
import os as _os

from hexir._runtime import (  # noqa: F401  (the public runtime API)
    Device,
    Error,
    Function,
    Future,
    Module,
    Parameters,
    Tensor,
    device,
    devices,
    from_dlpack,
    load,
)

__all__ = [
    "CompileError", "Device", "Error", "Function", "Future", "Module", "Parameters", "Tensor",
    "compile", "device", "devices", "from_dlpack", "generate", "import_model", "load",
]


class CompileError(Error):
    """hexir.compile failed: .diagnostics lists every MLIR diagnostic (severity, location,
    message); str() is the first error as "location: error: message"."""

    def __init__(self, diagnostics):
        self.diagnostics = list(diagnostics)
        self.code = "invalid_argument"
        errors = [d for d in self.diagnostics if d.severity == "error"] or self.diagnostics
        super().__init__(str(errors[0]) if errors else "compilation failed without a diagnostic")


def _load_compiler():
    import importlib
    return importlib.import_module("hexir._compiler")  # libMLIR: loaded on first use only


def _read_source(source_or_path):
    """(text, name): MLIR text as given, or read from a path (str or os.PathLike)."""
    if isinstance(source_or_path, (bytes, bytearray)):
        return bytes(source_or_path).decode(), "<string>"
    if isinstance(source_or_path, _os.PathLike) or (
            isinstance(source_or_path, str) and "\n" not in source_or_path and "{" not in source_or_path):
        path = _os.fspath(source_or_path)
        try:
            with open(path) as f:
                return f.read(), path
        except OSError as e:
            error = Error(f"cannot read MLIR source '{path}': {e.strerror}")
            error.code = "not_found"
            raise error from None
    if not isinstance(source_or_path, str):
        raise TypeError(f"hexir.compile: expected MLIR text or a path, got {type(source_or_path).__name__}")
    return source_or_path, "<string>"


def compile(source_or_path, targets=("cpu",), **flags):  # noqa: A001 (the issue's name)
    """Compiles MLIR (text, or a path to a .mlir file) into .vmfb bytes, with the pipeline of
    hexir-compile. targets: one of "cpu", "cuda". flags: cpu, max_workgroups, fusion,
    schedule ("waves" or "serial"), cuda_chip, cuda_format, cuda_features. Raises CompileError carrying the diagnostics."""
    if isinstance(targets, str):
        targets = [targets]
    targets = list(targets)
    if len(targets) != 1:
        error = Error(f"hexir.compile: targets={targets!r}: one target per module is supported so far")
        error.code = "unimplemented"
        raise error
    text, name = _read_source(source_or_path)
    result = _load_compiler().compile(text, name, targets[0], flags)
    if not result.ok:
        raise CompileError(result.diagnostics)
    return result.vmfb


def import_model(path, **options):
    """Imports a model file (ONNX .onnx, llama2.c .bin, GGUF .gguf) into MLIR text, with the
    importers of hexir-import. options: format, entry, cache_len, weights, decode_chunk."""
    text, error = _load_compiler().import_model(_os.fspath(path), options)
    if error is not None:
        exc = Error(error[1])
        exc.code = error[0]
        raise exc
    return text


def generate(module, parameters, prompt_ids=(1,), max_tokens=64):
    """Greedy decoding with a module imported from a llama2.c or GGUF checkpoint (import_model,
    then compile) and that checkpoint's Parameters: returns an iterator over the generated token
    ids (the prompt excluded, the stopping token included), as hexir-generate prints them.

    prompt_ids starts with BOS (1). The whole decode loop runs inside the module's @generate, in
    one asynchronous call: the iterator yields the ids once that call has finished (it does not
    stream tokens while the loop runs)."""
    import numpy as np
    prompt = np.asarray(prompt_ids, dtype=np.int64).reshape(-1)
    vocab = parameters.config["vocab_size"]
    for i, token in enumerate(prompt.tolist()):
        if not 0 <= token < vocab:
            error = Error(f"prompt token {i} is {token}, outside the vocabulary 0..{vocab - 1}")
            error.code = "invalid_argument"
            raise error
    if "cache_len" in module.functions:
        cache_len = int(module.cache_len().numpy()[0])
        if len(prompt) > cache_len:
            error = Error(f"the prompt has {len(prompt)} tokens but module '{module.name}' has a KV cache "
                          f"of {cache_len} positions (import_model(..., cache_len=N))")
            error.code = "invalid_argument"
            raise error
    future = module["generate"].async_(prompt, int(max_tokens), parameters)

    def ids():
        for token in future.result().numpy().tolist():
            if token < 0:
                return
            yield token
    return ids()
