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
    importers of hexir-import. options: format, entry, cache_len, weights, kv_cache, decode_chunk;
    ONNX: parameters (a path: initializers over parameter_threshold bytes, default 4096, are
    written there and become the entry function's last arguments: pass Parameters(path))."""
    text, error = _load_compiler().import_model(_os.fspath(path), options)
    if error is not None:
        exc = Error(error[1])
        exc.code = error[0]
        raise exc
    return text


def generate(module, parameters, prompt_ids=(1,), max_tokens=64, *, stream=False, temperature=0.0,
             top_k=40, top_p=0.95, min_p=0.05, repetition_penalty=1.0, repeat_last_n=64, seed=0):
    """Decoding with a module imported from a llama2.c or GGUF checkpoint (import_model, then
    compile) and that checkpoint's Parameters: returns an iterator over the generated token ids
    (the prompt excluded, the stopping token included), as hexir-generate prints them.

    prompt_ids starts with BOS (1). Greedy and not streamed (the defaults): the whole decode loop
    runs inside the module's @generate in one asynchronous call, and the ids are yielded once it
    has finished. With stream=True, a temperature > 0 or a repetition penalty != 1, the host
    drives the decode chunks (@generate_begin, then @generate_chunk) and the iterator yields each
    chunk's ids as soon as that chunk ends (the GIL is released while a chunk runs). Tokens are
    chosen on the device by llama.cpp's samplers in its order (repetition penalty over the last
    repeat_last_n <= 64 tokens, top_k, top_p, min_p, temperature; compiler/importers/llama/
    Sampler.h), with Philox noise keyed by seed and step: a fixed seed gives the same ids on every
    run; temperature 0 is greedy."""
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
    if stream or temperature > 0 or repetition_penalty != 1.0:
        return _stream(module, parameters, prompt, int(max_tokens),
                       (temperature, top_k, top_p, min_p, repetition_penalty, repeat_last_n, seed))
    future = module["generate"].async_(prompt, int(max_tokens), parameters)

    def ids():
        for token in future.result().numpy().tolist():
            if token < 0:
                return
            yield token
    return ids()


def _invalid(message):
    error = Error(message)
    error.code = "invalid_argument"
    return error


def _stream(module, parameters, prompt, max_tokens, settings):
    """The streaming loop of tools/common/llama_stream.cc: state = (pos, n, token, stop flag,
    ids, K/V caches), the results of one call and arguments of the next."""
    import numpy as np
    temperature, top_k, top_p, min_p, penalty, last_n, seed = settings
    if not temperature >= 0:
        raise _invalid(f"temperature {temperature} must be >= 0")
    if not 0 <= top_p <= 1:
        raise _invalid(f"top-p {top_p} must be in [0, 1]")
    if not 0 <= min_p <= 1:
        raise _invalid(f"min-p {min_p} must be in [0, 1]")
    if not penalty > 0:
        raise _invalid(f"repetition penalty {penalty} must be > 0")
    if not 0 <= last_n <= 64:
        raise _invalid(f"repeat-last-n {last_n} must be in [0, 64]")
    if "generate_begin" not in module.functions:
        error = Error("the module has no @generate_begin/@generate_chunk (imported before sampling and "
                      "streaming existed): import and compile it again")
        error.code = "failed_precondition"
        raise error
    # Sampler.h's argument layouts: (temperature, top_p, min_p, penalty), (seed, top_k, last_n).
    floats = np.array([temperature, top_p, min_p, penalty], np.float32)
    ints = np.array([seed, top_k, last_n], np.int64)
    head = (prompt, max_tokens, floats, ints)

    def ids():
        state = module["generate_begin"].async_(*head, parameters).result()
        reported, last_n_done = 0, -1
        while True:
            n, stopped = state[1], int(state[3].numpy()[0])
            written = state[4].numpy()
            for token in written[reported:n].tolist():
                if token < 0:
                    return
                reported += 1
                yield token
            if stopped or n >= len(written) or n == last_n_done:
                return
            last_n_done = n
            state = module["generate_chunk"].async_(*head, *state, parameters).result()
    return ids()
