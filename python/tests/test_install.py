"""The package copied into a virtual environment (README "Use") works there without PYTHONPATH."""
import json
import os
import shutil
import subprocess
import sys
import venv

import numpy as np

import hexir
from conftest import MLP
from test_calls import mlp_reference


def test_the_package_copied_into_a_virtual_environment_compiles_loads_and_calls(tmp_path):
    env = tmp_path / "env"
    venv.create(env, system_site_packages=True, with_pip=False)  # NumPy and torch from the system
    python = str(env / "bin" / "python")
    clean = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True, env=clean).stdout.strip()
    shutil.copytree(os.path.dirname(hexir.__file__), os.path.join(site, "hexir"))
    (tmp_path / "mlp.mlir").write_text(MLP)
    script = ("import hexir, json, numpy as np; m = hexir.load(hexir.compile('mlp.mlir')); print(hexir.__file__); "
              "print(json.dumps(m.main(np.array([[1, 2, 3, 4], [-1, 0.5, 2, -3]], np.float32)).numpy().tolist()))")
    out = subprocess.run([python, "-c", script], capture_output=True, text=True, env=clean, cwd=tmp_path,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    location, values = out.stdout.splitlines()
    assert location.startswith(site + os.sep)
    x = np.array([[1, 2, 3, 4], [-1, 0.5, 2, -3]], np.float32)
    np.testing.assert_allclose(np.array(json.loads(values)), mlp_reference(x), rtol=1e-5, atol=1e-6)
