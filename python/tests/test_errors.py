"""Bad calls raise hexir.Error with the runtime's message; none of them crashes Python."""
import subprocess
import sys

import numpy as np
import pytest

import hexir


def test_a_wrong_shape_names_the_input_and_both_shapes(mlp):
    with pytest.raises(hexir.Error, match=r"input 0: expected 2x4xf32, got 3x4xf32") as e:
        mlp.main(np.ones((3, 4), np.float32))
    assert e.value.code == "invalid_argument"


def test_a_wrong_dtype_names_the_expected_element_type(mlp):
    with pytest.raises(hexir.Error, match=r"input 0: expected element type f32, got i32"):
        mlp.main(np.ones((2, 4), np.int32))


def test_a_wrong_argument_count_names_the_signature(mlp):
    x = np.ones((2, 4), np.float32)
    with pytest.raises(hexir.Error, match=r"function 'main' expects 1 inputs \(main\(tensor<2x4xf32>\) "
                                          r"-> \(tensor<2x3xf32>\)\), got 2"):
        mlp.main(x, x)


def test_a_wrong_scalar_kind_names_the_input(abi):
    with pytest.raises(hexir.Error, match=r"function 'pair' input 1: expected i64 \(an int\), got float"):
        abi.pair([1, 2, 3], 2.5)
    with pytest.raises(hexir.Error, match=r"function 'scale' input 1: expected f32 \(a float\), got str"):
        abi.scale([1.0], "two")


def test_an_unsupported_numpy_dtype_is_named(abi):
    with pytest.raises(hexir.Error, match=r"NumPy dtype 'complex64' has no Hexir element type"):
        abi.scale(np.ones(3, np.complex64), 1.0)


def test_calling_a_closed_module_is_an_error_but_its_results_stay_readable(abi):
    y = abi.scale(np.ones(3, np.float32), 2.0)
    abi.close()
    with pytest.raises(hexir.Error, match=r"module 'module' is closed; function 'scale' cannot be called") as e:
        abi.scale(np.ones(3, np.float32), 2.0)
    assert e.value.code == "failed_precondition"
    np.testing.assert_array_equal(y.numpy(), [2.0, 2.0, 2.0])


def test_a_function_taken_before_close_refuses_sync_and_async_calls_after_it(abi):
    f = abi.scale
    g = abi["identity"]
    abi.close()
    assert abi.closed
    for call in (lambda: f(np.ones(3, np.float32), 2.0), lambda: abi.scale(np.ones(3, np.float32), 2.0),
                 lambda: f.async_(np.ones(3, np.float32), 2.0).result(timeout=60)):
        with pytest.raises(hexir.Error, match=r"module 'module' is closed; function 'scale' cannot be called"):
            call()
    with pytest.raises(hexir.Error, match=r"module 'module' is closed") as e:
        abi.pair  # never looked up before the close
    assert e.value.code == "failed_precondition"
    with pytest.raises(hexir.Error, match=r"function 'identity' cannot be called"):
        g(np.ones((2, 3), np.float32))


def test_an_absent_device_names_the_device_and_the_reason():
    if any(d["driver"] == "cuda" for d in hexir.devices()):
        pytest.skip("a CUDA device is present here")
    with pytest.raises(hexir.Error, match=r"device 'cuda': cuda driver: libcuda.so.1 could not be loaded") as e:
        hexir.load(b"", devices=["cuda"])
    assert e.value.code == "unavailable"
    with pytest.raises(hexir.Error, match=r"device 'tpu': no HAL driver for device uri 'tpu' \(known drivers: cpu, cuda\)") as e:
        hexir.device("tpu")
    assert e.value.code == "not_found"


def test_an_unknown_function_lists_the_exports(abi):
    with pytest.raises(AttributeError, match=r"has no function 'nope' \(exports: scale, identity, pair, negate_mask\)"):
        abi.nope
    with pytest.raises(hexir.Error, match="nope") as e:
        abi["nope"]
    assert e.value.code == "not_found"


def test_missing_and_corrupt_modules_are_errors(tmp_path):
    with pytest.raises(hexir.Error, match="missing.vmfb") as e:
        hexir.load(tmp_path / "missing.vmfb")
    assert e.value.code == "not_found"
    with pytest.raises(hexir.Error):
        hexir.load(b"HXIRVMFB" + b"\xff" * 100)


def test_a_trap_inside_the_module_is_an_error_and_the_module_stays_usable(abi):
    with pytest.raises(hexir.Error, match=r"function 'identity' @\d+: hal.buffer_view.assert: "
                                          r"input 0: expected rank 2 \(2x3xf32\), got rank 1 \(6xf32\)"):
        abi.identity(np.ones(6, np.float32))
    assert abi.identity(np.ones((2, 3), np.float32)).shape == (2, 3)


def test_a_run_of_bad_calls_ends_with_a_normal_exit():
    script = r"""
import numpy as np, hexir, conftest
m = hexir.load(conftest.vmfb(conftest.ABI))
bad = [lambda: m.scale(), lambda: m.scale(None, 1.0), lambda: m.scale(np.ones((2, 2), np.float32), 1.0),
       lambda: m.identity(np.ones((3, 3))), lambda: m.pair(np.ones(3, np.int64), None),
       lambda: hexir.load(b"garbage"), lambda: hexir.from_dlpack(object())]
for call in bad:
    try:
        call()
    except (hexir.Error, TypeError, AttributeError):
        pass
m.close(); m.close()
print("survived")
"""
    import os
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env,
                         cwd=os.path.dirname(__file__), timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "survived"
