// Vendor baselines and device peaks, loaded at run time (dlopen) so that hexir-bench runs
// anywhere: OpenBLAS (Debian libopenblas-dev) + memcpy on the CPU, cuBLAS + cuMemcpyDtoD on
// CUDA. Nothing is hard-coded: every figure is measured on the machine it describes.
//
// Ownership: a Baseline owns its library handle and scratch memory. Not thread-safe.
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "tools/hexir-bench/costs.h"

namespace hexir::tools::bench {

class Baseline {
 public:
  virtual ~Baseline() = default;
  // "OpenBLAS (libopenblas.so.0)", "cuBLAS (libcublas.so.13)"; notes on what is missing.
  virtual std::string name() const = 0;
  // Median seconds of one GEMM C = A x B of `shape` (row-major, no transposes; batch > 1
  // loops). `note` says when a proxy type was used. Unavailable without the library,
  // Unimplemented for types the library cannot run.
  virtual StatusOr<double> TimeGemm(const MatmulShape& shape, std::string* note) = 0;
  // Device copy bandwidth in GB/s, counting bytes read + bytes written.
  virtual StatusOr<double> MeasureCopyGbps(std::string* what) = 0;
  // Achieved GFLOP/s of a large GEMM (the compute roof).
  virtual StatusOr<double> MeasurePeakGflops(std::string* what) = 0;
};

// CPU: memcpy bandwidth always; GEMMs need libopenblas.so.0 (else Unavailable from TimeGemm).
std::unique_ptr<Baseline> CreateCpuBaseline();
// CUDA device `ordinal`: Unavailable without libcuda / a GPU. Without libcublas the GEMM
// calls return Unavailable naming the libraries tried.
StatusOr<std::unique_ptr<Baseline>> CreateCudaBaseline(int ordinal);

}  // namespace hexir::tools::bench
