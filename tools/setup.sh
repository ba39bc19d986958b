#!/usr/bin/env bash
# Installs every Debian package Hexir needs. Idempotent: when everything is present it
# changes nothing and makes no network request.
set -euo pipefail

PACKAGES=(
  bazel-bootstrap
  libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools clang-22 lld-22
  binutils  # ld.bfd: links the CPU kernels (compiler/README.md, CPU target)
  catch2 libcli11-dev flatbuffers-compiler libflatbuffers-dev
  lua5.4 libclang-rt-22-dev
  libopenblas-dev
  python3-torch python3-torchvision  # tests/onnx: torch_export_test, zoo_test (exports at test time)
  libonnx-dev libprotobuf-dev libonnx-testdata  # ONNX importer (hexir-import) and its node tests
  pybind11-dev python3-dev python3-numpy python3-pytest libdlpack-dev  # python/ (import hexir)
  libopenmpi-dev openmpi-bin  # MPI channels of CPU ranks (headers; libmpi.so.40 is dlopened) and mpirun
  libgloo-dev  # Gloo channels of CPU ranks (linked into libhexir_gloo.so only, which is dlopened)
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} packages present"
else
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# CUDA headers are optional at build time: the CUDA driver dlopens libcuda.so.1 and
# carries its own declarations of the driver API, so nothing here requires the toolkit.
if [ ! -x /usr/local/cuda/bin/ptxas ]; then
  echo "setup: note: no CUDA toolkit at /usr/local/cuda; --target=cuda will be unavailable"
fi
