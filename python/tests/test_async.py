"""async_ calls and the GIL: calls run on the module's worker; waits let Python threads run."""
import threading
import time

import numpy as np
import pytest

import hexir


def test_an_async_call_returns_a_future_whose_result_equals_the_sync_call(mlp):
    x = np.array([[1, 2, 3, 4], [-1, 0.5, 2, -3]], np.float32)
    future = mlp.main.async_(x)
    assert isinstance(future, hexir.Future)
    y = future.result()
    assert future.done()
    np.testing.assert_array_equal(y.numpy(), mlp.main(x).numpy())
    assert future.result() is y  # converted once


def test_async_calls_complete_in_submission_order_with_their_own_inputs(abi):
    futures = [abi.scale.async_(np.full(16, i, np.float32), 2.0) for i in range(50)]
    for i, f in enumerate(futures):
        np.testing.assert_array_equal(f.result(timeout=60).numpy(), np.full(16, 2.0 * i))


def test_an_async_error_is_raised_by_result(mlp):
    future = mlp.main.async_(np.ones((5, 4), np.float32))
    with pytest.raises(hexir.Error, match=r"input 0: expected 2x4xf32, got 5x4xf32"):
        future.result()


def test_closing_a_module_waits_for_its_queued_async_calls(abi):
    futures = [abi.scale.async_(np.ones(1024, np.float32), float(i)) for i in range(20)]
    abi.close()
    assert all(f.done() for f in futures)
    assert futures[-1].result().numpy()[0] == 19.0


def test_the_gil_is_released_while_a_call_runs():
    from conftest import MATMUL, vmfb
    m = hexir.load(vmfb(MATMUL), cpu_threads=0)  # inline device: the calling thread computes
    a = np.random.default_rng(1).standard_normal((768, 768)).astype(np.float32)
    span = {}

    def call():
        span["start"] = time.perf_counter()
        m.matmul(a, a).numpy()
        span["end"] = time.perf_counter()

    ticks = []
    worker = threading.Thread(target=call)
    worker.start()
    while worker.is_alive():
        ticks.append(time.perf_counter())
    worker.join()
    during = [t for t in ticks if span["start"] < t < span["end"]]
    duration = span["end"] - span["start"]
    # Holding the GIL for the call would leave this thread without a single tick inside it.
    assert len(during) > 1000, f"{len(during)} ticks of the main thread during a {duration:.3f} s call"


def ticks_of_another_thread_during(action):
    """Runs action() here while a second Python thread counts loop turns; returns the turns
    taken while action() ran (none if it held the GIL throughout) and its duration."""
    ticks, stop = [], threading.Event()

    def tick():
        while not stop.is_set():
            ticks.append(time.perf_counter())

    ticker = threading.Thread(target=tick)
    ticker.start()
    time.sleep(0.05)  # the ticker is running
    start = time.perf_counter()
    action()
    end = time.perf_counter()
    stop.set()
    ticker.join()
    return len([t for t in ticks if start < t < end]), end - start


@pytest.mark.parametrize("wait", ["future.result", "tensor.numpy", "device.wait_idle"])
def test_the_gil_is_released_while_the_runtime_waits_for_the_device(wait):
    from conftest import MATMUL, vmfb
    # One worker thread: the call only queues the dispatch, the waits below find it running.
    m = hexir.load(vmfb(MATMUL), cpu_threads=1)
    a = np.random.default_rng(2).standard_normal((1024, 1024)).astype(np.float32)
    m.matmul(a[:8, :8], a[:8, :8]).numpy()  # warm up: executables loaded
    waits = m.device.stats()["host_waits"]

    # The work is queued inside the action, once the other thread is counting: queued before,
    # a fast machine finishes it while the counter starts and the wait finds nothing pending.
    def action():
        if wait == "future.result":
            return m.matmul.async_(a, a).result().numpy()
        y = m.matmul(a, a)
        if wait == "tensor.numpy":
            return y.numpy()
        m.device.wait_idle()
        return y

    during, seconds = ticks_of_another_thread_during(action)
    assert m.device.stats()["host_waits"] > waits, "nothing waited for the device"
    # Holding the GIL while waiting would leave the other thread without a single turn.
    assert during > 1000, f"{during} turns of the other thread during a {seconds:.3f} s {wait}"


def test_a_future_wait_times_out_without_blocking_other_threads():
    from conftest import MATMUL, vmfb
    m = hexir.load(vmfb(MATMUL), cpu_threads=0)
    a = np.ones((768, 768), np.float32)
    future = m.matmul.async_(a, a)
    future.wait(timeout=0.0)  # returns at once, done or not
    c = future.result(timeout=120).numpy()
    assert c[0, 0] == 768.0 and c[-1, -1] == 768.0
