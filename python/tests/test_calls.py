"""Calling functions from Python: NumPy and scalar inputs, Tensor results, names, reads."""
import numpy as np
import pytest

import hexir
from conftest import B1, W1, W2


def mlp_reference(x):
    h = np.maximum(x.astype(np.float64) @ np.array(W1) + np.array(B1), 0.0)
    return h @ np.array(W2)


def test_the_mlp_called_with_a_numpy_array_matches_a_numpy_reference(mlp):
    x = np.array([[1, 2, 3, 4], [-1, 0.5, 2, -3]], np.float32)
    y = mlp.main(x)
    assert isinstance(y, hexir.Tensor)
    assert y.shape == (2, 3)
    assert y.dtype == np.float32
    np.testing.assert_allclose(y.numpy(), mlp_reference(x), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(y), mlp_reference(x), rtol=1e-5, atol=1e-6)


def test_functions_are_reached_by_attribute_and_by_name(abi):
    assert abi.functions == ["scale", "identity", "pair", "negate_mask"]
    assert abi["scale"].signature == "scale(tensor<?xf32>, f32) -> (tensor<?xf32>)"
    x = np.arange(5, dtype=np.float32)
    np.testing.assert_array_equal(abi["scale"](x, 3.0).numpy(), x * 3)
    np.testing.assert_array_equal(abi.scale(x, 3.0).numpy(), x * 3)


def test_a_function_is_one_object_per_name_and_takes_positional_arguments_only(abi):
    f = abi.scale
    assert isinstance(f, hexir.Function)
    assert abi.scale is f and abi["scale"] is f  # made once, then cached by the module
    assert f.name == "scale" and repr(f) == "hexir.Function(scale(tensor<?xf32>, f32) -> (tensor<?xf32>))"
    with pytest.raises(TypeError, match="positional arguments only"):
        f(np.ones(2, np.float32), s=2.0)
    with pytest.raises(TypeError):
        hexir.Function()
    args = (np.arange(3, dtype=np.float32), 2.0)
    np.testing.assert_array_equal(f(*args).numpy(), [0.0, 2.0, 4.0])


def test_two_threads_calling_one_function_each_get_their_own_results(abi):
    import threading
    f = abi.scale
    failures = []

    def calls(offset):
        for i in range(300):
            n = 1 + (i + offset) % 17
            x = np.full(n, float(offset + i), np.float32)
            y = f(x, 0.5)
            if y.shape != (n,) or not np.array_equal(y.numpy(), x * np.float32(0.5)):
                failures.append((offset, i, y.shape))

    threads = [threading.Thread(target=calls, args=(k * 1000,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


def test_python_scalars_and_lists_become_scalar_and_tensor_arguments(abi):
    # an int where the function takes f32, and a list where it takes a tensor
    np.testing.assert_array_equal(abi.scale([1.0, 2.0, 4.0], 2).numpy(), [2.0, 4.0, 8.0])
    t, k = abi.pair([5, 6, 7], 21)
    assert k == 42 and isinstance(k, int)
    assert t.dtype == np.int64
    np.testing.assert_array_equal(t.numpy(), [5, 6, 7])


def test_a_dynamic_dimension_takes_the_size_of_each_call(abi):
    for n in (1, 7, 1000):
        x = np.linspace(-1, 1, n, dtype=np.float32)
        y = abi.scale(x, -0.5)
        assert y.shape == (n,)
        np.testing.assert_array_equal(y.numpy(), x * np.float32(-0.5))


def test_boolean_tensors_round_trip_as_numpy_bool(abi):
    y = abi.negate_mask(np.array([True, False, False, True]))
    assert y.dtype == np.bool_
    np.testing.assert_array_equal(y.numpy(), [False, True, True, False])


def test_results_stay_on_the_device_until_they_are_read(abi):
    device = abi.device
    x = np.arange(4096, dtype=np.float32)
    abi.scale(x, 1.0).numpy()  # warm up
    waits = device.stats()["host_waits"]
    y = abi.scale(x, 2.0)
    assert device.stats()["host_waits"] == waits, "the call itself waited for the device"
    np.testing.assert_array_equal(y.numpy(), x * 2)
    assert device.stats()["host_waits"] == waits + 1, "reading the result is the one wait"


def test_a_result_passed_to_the_next_call_is_used_in_place(abi):
    x = np.arange(6, dtype=np.float32)
    y = abi.scale(abi.scale(x, 2.0), 3.0)
    np.testing.assert_array_equal(y.numpy(), x * 6)


def test_modules_loaded_from_a_path_and_from_bytes_compute_the_same(tmp_path, mlp):
    from conftest import MLP, vmfb
    path = tmp_path / "mlp.vmfb"
    path.write_bytes(vmfb(MLP))
    x = np.ones((2, 4), np.float32)
    with hexir.load(path, devices=["cpu"]) as from_file:
        np.testing.assert_array_equal(from_file.main(x).numpy(), mlp.main(x).numpy())
    assert from_file.closed


def test_devices_lists_the_cpu_with_its_driver_memory_and_links():
    found = hexir.devices()
    cpu = next(d for d in found if d["uri"] == "cpu")
    assert cpu["driver"] == "cpu" and cpu["host_memory"] and cpu["memory"] == "host"
    assert all(set(d) == {"uri", "driver", "host_memory", "memory", "links"} for d in found)
    assert all(len(d["links"]) == len(found) - 1 for d in found)
    assert hexir.device("cpu").uri == "cpu"


def test_devices_describes_every_pair_and_measures_copies_when_asked():
    found = hexir.devices(["cpu", "cpu:threads=1"], measure_bytes=1 << 20)
    assert [d["uri"] for d in found] == ["cpu", "cpu:threads=1"]
    (to_second,), (to_first,) = found[0]["links"], found[1]["links"]
    assert to_second["to"] == "cpu:threads=1" and to_first["to"] == "cpu"
    for link in (to_second, to_first):
        assert link["link"] == "host memory"
        assert link["shared_memory"] and not link["peer_access"]
        assert link["gbps"] > 0
    assert "gbps" not in hexir.devices(["cpu", "cpu:threads=1"])[0]["links"][0]


def test_devices_of_an_absent_uri_names_it():
    with pytest.raises(hexir.Error, match="device 'tpu:0'"):
        hexir.devices(["cpu", "tpu:0"])
