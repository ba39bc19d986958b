"""DLPack both ways, zero copy on the CPU: NumPy and PyTorch tensors in, hexir.Tensor out."""
import numpy as np
import pytest

import cuda_checks
import hexir

torch = pytest.importorskip("torch")


def test_torch_from_dlpack_of_a_result_shares_its_memory(abi):
    y = abi.scale(np.arange(8, dtype=np.float32), 2.0)
    t = torch.from_dlpack(y)
    assert t.data_ptr() == y.data_ptr()
    assert t.dtype == torch.float32 and tuple(t.shape) == (8,)
    assert torch.equal(t, torch.arange(8, dtype=torch.float32) * 2)
    del y  # the torch tensor keeps the buffer alive
    assert t.sum().item() == 56.0


def test_numpy_from_dlpack_of_a_result_shares_its_memory(abi):
    y = abi.scale(np.arange(3, dtype=np.float32), 1.5)
    a = np.from_dlpack(y)
    assert a.ctypes.data == y.data_ptr()
    np.testing.assert_array_equal(a, [0.0, 1.5, 3.0])


def test_a_torch_tensor_argument_is_passed_without_a_copy(abi):
    x = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    y = abi.identity(x)  # returns its argument's buffer
    assert y.data_ptr() == x.data_ptr()
    assert hexir.from_dlpack(x).data_ptr() == x.data_ptr()
    assert torch.equal(torch.from_dlpack(abi.scale(x.reshape(6), 0.5)), x.reshape(6) * 0.5)


def test_a_numpy_argument_is_passed_without_a_copy(abi):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert abi.identity(x).data_ptr() == x.ctypes.data


def test_a_non_contiguous_numpy_array_is_copied_and_computes_correctly(abi):
    x = np.arange(20, dtype=np.float32)[::2]
    np.testing.assert_array_equal(abi.scale(x, 2.0).numpy(), x * 2)


def test_a_non_contiguous_torch_tensor_is_refused_with_its_strides(abi):
    x = torch.arange(12, dtype=torch.float32).reshape(3, 4).t()
    with pytest.raises(hexir.Error, match=r"is not contiguous \(dimension 1 has stride 4, expected 1\)"):
        hexir.from_dlpack(x)


def test_a_torch_tensor_outlives_nothing_it_lent(abi):
    # the module holds the torch tensor's memory until the call is done with it
    x = torch.full((1000,), 3.0)
    f = abi.scale.async_(x, 2.0)
    del x
    assert torch.equal(torch.from_dlpack(f.result()), torch.full((1000,), 6.0))


def test_bfloat16_tensors_travel_through_dlpack_but_not_numpy():
    # (bf16 arithmetic on the CPU needs __truncsfbf2, which the CPU kernels do not link yet:
    # the function returns its argument.)
    m = hexir.load(hexir.compile(
        "func.func @same(%x: tensor<4xbf16>) -> tensor<4xbf16> { return %x : tensor<4xbf16> }"))
    x = torch.tensor([1.0, -2.5, 0.5, 3.0], dtype=torch.bfloat16)
    y = m.same(x)
    assert y.dtype == "bfloat16"
    assert torch.equal(torch.from_dlpack(y), x)
    with pytest.raises(hexir.Error, match="NumPy has no bfloat16 dtype"):
        y.numpy()


class CudaTensorStandIn:
    """A DLPack producer that says its tensor is on cuda:0 and must not be handed over."""

    handed_over = False

    def __dlpack_device__(self):
        return (2, 0)  # kDLCUDA, GPU 0

    def __dlpack__(self, stream=None):
        CudaTensorStandIn.handed_over = True
        raise AssertionError("the tensor was asked for although the device cannot use it")


def test_gpu_memory_passed_to_a_cpu_device_is_refused_before_it_is_handed_over(abi):
    with pytest.raises(hexir.Error, match=r"DLPack tensor on cuda:0 cannot be used by device 'cpu' "
                                          r"\(it uses only memory of its own; move the tensor there "
                                          r"first, e\.g\. tensor\.to\('cpu'\)\)") as error:
        abi.scale(CudaTensorStandIn(), 2.0)
    assert error.value.code == "invalid_argument"
    assert not CudaTensorStandIn.handed_over


def test_a_result_in_host_memory_is_a_dlpack_cpu_tensor(abi):
    y = abi.scale(np.arange(4, dtype=np.float32), 3.0)
    assert y.__dlpack_device__() == (1, 0)  # kDLCPU


def test_an_input_lent_without_a_copy_is_given_back_when_its_results_are_gone(abi):
    import gc
    import sys
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    before = sys.getrefcount(x)
    y = abi.identity(x)
    assert sys.getrefcount(x) == before + 1  # the result's buffer holds the array
    del y
    gc.collect()
    assert sys.getrefcount(x) == before


@pytest.mark.skipif(not cuda_checks.cuda_usable(hexir, torch), reason="HEXIR_SKIPPED: no CUDA device for torch and hexir")
def test_torch_cuda_tensors_pass_both_ways_without_a_copy():
    with open(cuda_checks.SOURCE) as f:
        vmfb = hexir.compile(f.read(), targets=["cuda"])
    cuda_checks.check_torch_cuda_tensors_pass_both_ways_without_a_copy(hexir, torch, vmfb)
