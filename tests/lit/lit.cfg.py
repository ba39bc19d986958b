# Lit configuration for Hexir compiler tests. Tool paths come from the environment
# (set by run_lit.sh under Bazel): HEXIR_OPT, HEXIR_COMPILE, HEXIR_DUMP, FILECHECK.
import os
import lit.formats

config.name = "Hexir"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.environ.get("LIT_EXEC_ROOT", os.path.join(config.test_source_root, "Output"))
config.excludes = ["lit.cfg.py", "BUILD.bazel", "run_lit.sh", "Output"]

def tool(env, default):
    return os.path.abspath(os.environ.get(env, default))

config.substitutions.append(("hexir-opt", tool("HEXIR_OPT", "bazel-bin/tools/hexir-opt/hexir-opt")))
config.substitutions.append(("hexir-compile", tool("HEXIR_COMPILE", "bazel-bin/tools/hexir-compile/hexir-compile")))
config.substitutions.append(("hexir-dump", tool("HEXIR_DUMP", "bazel-bin/tools/hexir-dump/hexir-dump")))
config.substitutions.append(("FileCheck", os.environ.get("FILECHECK", "/usr/lib/llvm-22/bin/FileCheck")))
# `not` as a word only (lit substitutes regular expressions): pass names such as
# hexir-annotate-dispatch-costs contain it.
config.substitutions.append((r"(?<![\w-])not(?![\w-])", os.environ.get("NOT", "/usr/lib/llvm-22/bin/not")))

# CUDA code generation tests need the toolkit's ptxas (CUDA_HOME, else /usr/local/cuda).
_cuda_home = os.environ.get("CUDA_HOME") or "/usr/local/cuda"
if os.access(os.path.join(_cuda_home, "bin", "ptxas"), os.X_OK):
    config.available_features.add("cuda-toolkit")
