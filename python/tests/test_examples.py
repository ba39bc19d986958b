"""The scripts in examples/python/ run and agree with their references."""
import os
import subprocess
import sys

import pytest

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "python")


def test_the_onnx_example_imports_compiles_runs_and_matches_its_reference():
    if not os.path.exists("/usr/share/libonnx-testdata/data/node/test_conv_with_strides_padding/model.onnx"):
        pytest.skip("libonnx-testdata is not installed")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, os.path.join(EXAMPLES, "onnx_conv.py")], capture_output=True,
                         text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "loaded: main(tensor<1x1x7x5xf32>, tensor<1x1x3x3xf32>) -> (tensor<1x1x4x3xf32>)" in out.stdout
    assert "max |hexir - reference| = " in out.stdout
