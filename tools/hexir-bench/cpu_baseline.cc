// OpenBLAS through dlopen: the runtime must not link it, and machines without it still run
// hexir-bench (GEMM baselines then say why they are missing).
#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "tools/hexir-bench/baselines.h"
#include "tools/hexir-bench/timing.h"

namespace hexir::tools::bench {
namespace {

// CBLAS enums (cblas.h): row-major 101, no-transpose 111, transpose 112.
constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;
using SgemmFn = void (*)(int, int, int, int, int, int, float, const float*, int, const float*,
                         int, float, float*, int);
using SgemvFn = void (*)(int, int, int, int, float, const float*, int, const float*, int, float,
                         float*, int);

class CpuBaseline final : public Baseline {
 public:
  CpuBaseline() {
    for (const char* lib : {"libopenblas.so.0", "libopenblas.so"}) {
      handle_ = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
      if (handle_) {
        lib_ = lib;
        break;
      }
      error_ += std::string(error_.empty() ? "" : "; ") + dlerror();
    }
    if (handle_) {
      sgemm_ = reinterpret_cast<SgemmFn>(dlsym(handle_, "cblas_sgemm"));
      sgemv_ = reinterpret_cast<SgemvFn>(dlsym(handle_, "cblas_sgemv"));
      if (!sgemm_) error_ = std::string(lib_) + " has no cblas_sgemm";
    }
  }
  ~CpuBaseline() override {
    if (handle_) dlclose(handle_);
  }

  std::string name() const override {
    return sgemm_ ? "OpenBLAS (" + std::string(lib_) + ")" : "OpenBLAS unavailable: " + error_;
  }

  StatusOr<double> TimeGemm(const MatmulShape& s, std::string* note) override {
    return Time(s, note, /*best=*/false);
  }

  StatusOr<double> Time(const MatmulShape& s, std::string* note, bool best) {
    if (!sgemm_) return Unavailable("no OpenBLAS baseline: ", error_, " (install libopenblas-dev)");
    if (!s.is_static()) return InvalidArgument("matmul shape ", s.ToString(), " is not static");
    auto is_float = [](const std::string& t) { return t == "f32" || t == "bf16" || t == "f16"; };
    if (!is_float(s.lhs) || !is_float(s.rhs)) {
      return Unimplemented("OpenBLAS has no ", s.lhs, " GEMM");
    }
    if (s.lhs != "f32" || s.rhs != "f32") {
      // OpenBLAS 0.3.21 (Debian 12) exports no cblas_sbgemm: time f32 as a stand-in.
      *note = "f32 sgemm proxy for " + s.lhs;
    }
    const int64_t m = s.m, n = s.n, k = s.k;
    std::vector<float> a(m * k, 0.5f), b(k * n, 0.25f), c(m * n, 0.f);
    bool gemv = m == 1 && sgemv_;
    bool matvec = !gemv && n == 1 && sgemv_;
    if (gemv) *note += std::string(note->empty() ? "" : ", ") + "sgemv (M=1)";
    if (matvec) *note += std::string(note->empty() ? "" : ", ") + "sgemv (N=1)";
    auto once = [&] {
      for (int64_t i = 0; i < s.batch; ++i) {
        if (matvec) {
          // y(Mx1) = A(MxK) x(Kx1).
          sgemv_(kRowMajor, kNoTrans, int(m), int(k), 1.f, a.data(), int(k), b.data(), 1, 0.f,
                 c.data(), 1);
        } else if (gemv) {
          // y(1xN) = x(1xK) B(KxN)  <=>  y = B^T x.
          sgemv_(kRowMajor, kTrans, int(k), int(n), 1.f, b.data(), int(n), a.data(), 1, 0.f,
                 c.data(), 1);
        } else {
          sgemm_(kRowMajor, kNoTrans, kNoTrans, int(m), int(n), int(k), 1.f, a.data(), int(k),
                 b.data(), int(n), 0.f, c.data(), int(n));
        }
      }
    };
    return MedianSeconds(once, best ? 0.5 : 0.3, 5, best);
  }

  StatusOr<double> MeasureCopyGbps(std::string* what) override {
    const size_t bytes = size_t{128} << 20;
    std::vector<char> src(bytes, 1), dst(bytes, 0);
    double t = MedianSeconds([&] { std::memcpy(dst.data(), src.data(), bytes); }, 0.5, 5, true);
    *what = "memcpy of 128 MiB (1 thread, best of samples), read + write bytes";
    return 2.0 * bytes / t / 1e9;
  }

  StatusOr<double> MeasurePeakGflops(std::string* what) override {
    MatmulShape s;
    s.m = s.n = s.k = 1024;
    s.lhs = s.rhs = s.out = "f32";
    std::string note;
    HEXIR_ASSIGN_OR_RETURN(double t, Time(s, &note, /*best=*/true));
    *what = "OpenBLAS sgemm 1024^3, best of samples";
    return 2.0 * s.m * s.n * s.k / t / 1e9;
  }

 private:
  void* handle_ = nullptr;
  const char* lib_ = "";
  std::string error_;
  SgemmFn sgemm_ = nullptr;
  SgemvFn sgemv_ = nullptr;
};

}  // namespace

std::unique_ptr<Baseline> CreateCpuBaseline() { return std::make_unique<CpuBaseline>(); }

}  // namespace hexir::tools::bench
