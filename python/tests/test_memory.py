"""10^4 calls leak neither host memory (RSS) nor device buffers (device statistics)."""
import gc

import numpy as np
import pytest

import hexir

CALLS = 10_000


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def run(call, n):
    for _ in range(n):
        call()
    gc.collect()


@pytest.mark.parametrize("kind", ["numpy", "torch", "resident", "async"])
def test_ten_thousand_calls_keep_rss_and_live_buffers_flat(mlp, kind):
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    if kind == "torch":
        torch = pytest.importorskip("torch")
        x = torch.from_numpy(x.copy())
    if kind == "resident":
        x = mlp.device.put(x)  # a hexir.Tensor: no wrapping per call
    expected = mlp.main(x).numpy()
    if kind == "async":
        def call():
            np.testing.assert_array_equal(mlp.main.async_(x).result().numpy(), expected)
    else:
        def call():
            np.testing.assert_array_equal(mlp.main(x).numpy(), expected)

    device = mlp.device
    run(call, 1000)  # warm up: pools, caches, the allocator's arenas
    live = device.stats()["buffers_live"]
    rss = rss_bytes()
    before = device.stats()
    run(call, CALLS)
    after = device.stats()
    growth = rss_bytes() - rss
    assert after["dispatches_executed"] - before["dispatches_executed"] == 2 * CALLS
    assert after["buffers_live"] == live, "device buffers leaked"
    assert growth < 4 << 20, f"RSS grew by {growth} bytes over {CALLS} calls"
