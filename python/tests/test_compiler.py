"""hexir.compile and hexir.import_model: the tools' pipeline, diagnostics as exceptions."""
import os
import subprocess
import sys

import numpy as np
import pytest

import hexir

ONNX_GEMM = "/usr/share/libonnx-testdata/data/node/test_gemm_default_matrix_bias/model.onnx"


def test_compiling_a_file_and_its_text_gives_modules_that_agree(tmp_path):
    from conftest import MLP
    path = tmp_path / "mlp.mlir"
    path.write_text(MLP)
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    a = hexir.load(hexir.compile(path)).main(x).numpy()
    b = hexir.load(hexir.compile(MLP, targets="cpu", fusion=False)).main(x).numpy()
    np.testing.assert_allclose(a, b, rtol=1e-6)


def test_a_diagnostic_is_raised_with_its_location_and_message():
    source = "func.func @f(%x: tensor<2xf32>) -> tensor<3xf32> {\n  return %x : tensor<2xf32>\n}\n"
    with pytest.raises(hexir.CompileError) as e:
        hexir.compile(source)
    first = e.value.diagnostics[0]
    assert (first.severity, first.location) == ("error", "<string>:2:3")
    assert "type of return operand 0 ('tensor<2xf32>') doesn't match function result type" in first.message
    assert str(e.value).startswith("<string>:2:3: error: type of return operand 0")
    assert isinstance(e.value, hexir.Error)


def test_diagnostics_of_a_file_name_the_file(tmp_path):
    path = tmp_path / "bad.mlir"
    path.write_text("func.func @f() {\n  %0 = arith.addf\n}\n")
    with pytest.raises(hexir.CompileError) as e:
        hexir.compile(path)
    assert e.value.diagnostics[0].location == str(path) + ":2:18"
    assert e.value.diagnostics[0].message == "expected SSA operand"


def test_unknown_flags_and_targets_are_refused():
    from conftest import MLP
    with pytest.raises(TypeError, match=r"unknown flag 'fuse' \(flags: cpu, cuda_chip, cuda_features, "
                                        r"cuda_format, fusion, max_workgroups, schedule\)"):
        hexir.compile(MLP, fuse=False)
    with pytest.raises(hexir.CompileError, match="tpu"):
        hexir.compile(MLP, targets=["tpu"])
    with pytest.raises(hexir.Error, match="one target per module"):
        hexir.compile(MLP, targets=["cpu", "cuda"])


def test_an_onnx_gemm_imports_compiles_and_matches_numpy():
    if not os.path.exists(ONNX_GEMM):
        pytest.skip("libonnx-testdata is not installed")
    text = hexir.import_model(ONNX_GEMM)
    assert "func.func @main" in text
    m = hexir.load(hexir.compile(text))
    rng = np.random.default_rng(0)
    # the test model's graph: Y = A (3x6) B (6x4) + C (3x4)
    a, b, c = (rng.standard_normal(s).astype(np.float32) for s in ((3, 6), (6, 4), (3, 4)))
    np.testing.assert_allclose(m.main(a, b, c).numpy(), a.astype(np.float64) @ b + c, rtol=1e-5, atol=1e-5)


def test_import_errors_name_the_file_and_the_kinds(tmp_path):
    with pytest.raises(hexir.Error, match=r"cannot tell the kind of 'model.xyz' \(supported: gguf \(.gguf\), "
                                          r"llama2c \(.bin\), onnx \(.onnx\)"):
        hexir.import_model("model.xyz")
    junk = tmp_path / "junk.onnx"
    junk.write_bytes(b"not a protobuf \xff\xff")
    with pytest.raises(hexir.Error, match="not an ONNX model"):
        hexir.import_model(junk)
    with pytest.raises(TypeError, match="unknown option 'entry_name'"):
        hexir.import_model(junk, entry_name="f")


def test_a_llama2c_checkpoint_imports_to_a_decode_program():
    path = os.path.join(os.environ.get("HEXIR_SHARED_DIR", "/work/shared"), "models", "stories260K.bin")
    if not os.path.exists(path):
        pytest.skip(f"{path} is absent")
    text = hexir.import_model(path, cache_len=64)
    assert "func.func @generate" in text and "KV cache 64 positions" in text


def test_import_hexir_and_a_call_do_not_load_the_compiler(tmp_path):
    from conftest import ABI, vmfb
    path = tmp_path / "abi.vmfb"
    path.write_bytes(vmfb(ABI))
    script = f"""
import sys, hexir
m = hexir.load({str(path)!r})
print(m.scale([1.0, 2.0], 2.0).numpy().tolist())
maps = open("/proc/self/maps").read()
print("hexir._compiler" in sys.modules, "libMLIR" in maps, "libLLVM" in maps)
"""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:2] == ["[2.0, 4.0]", "False False False"]


def test_onnx_weights_go_to_a_parameter_file_bound_by_parameters(tmp_path):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(40, 30), torch.nn.ReLU(), torch.nn.Linear(30, 5)).eval()
    x = torch.randn(2, 40)
    torch.onnx.export(net, x, str(tmp_path / "mlp.onnx"), opset_version=14)
    text = hexir.import_model(tmp_path / "mlp.onnx", parameters=tmp_path / "mlp.gguf")
    assert "// %arg1: parameter '0.weight'" in text  # 30x40 f32: 4800 bytes, over 4096
    p = hexir.Parameters(tmp_path / "mlp.gguf")
    assert p.names == ["0.weight"] and p.config is None  # 40x30 f32; the rest stay in the text
    m = hexir.load(hexir.compile(text))
    with torch.no_grad():
        want = net(x).numpy()
    for _ in range(2):  # uploaded once, reused by the second call
        np.testing.assert_allclose(m.main(x.numpy(), p).numpy(), want, rtol=1e-5, atol=1e-5)
    assert p.uploads == 1
    with pytest.raises(hexir.Error, match="expects 2 inputs"):
        m.main(x.numpy())
