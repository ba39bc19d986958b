// cuBLAS and device-to-device copies, timed with CUDA events on a stream of the device's
// primary context. libcublas is dlopened (no header or link dependency): without it the
// GEMM figures say so and hexir-bench still runs.
#include <dlfcn.h>
#include <glob.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "hal/drivers/cuda/cuda_api.h"
#include "tools/hexir-bench/baselines.h"

namespace hexir::tools::bench {
namespace {

using hal::cuda::CudaApi;
// cuBLAS v2 API, declared here from its documented signatures (status 0 = success).
using CublasCreateFn = int (*)(void**);
using CublasDestroyFn = int (*)(void*);
using CublasSetStreamFn = int (*)(void*, CUstream);
using CublasGemmExFn = int (*)(void*, int, int, int, int, int, const void*, const void*, int, int,
                               const void*, int, int, const void*, void*, int, int, int, int);
constexpr int kOpN = 0;
constexpr int kR32F = 0, kR16F = 2, kR16BF = 14;  // cudaDataType
constexpr int kCompute32F = 68;                     // CUBLAS_COMPUTE_32F
constexpr int kGemmDefault = -1;                    // CUBLAS_GEMM_DEFAULT

int DataType(const std::string& t) {
  if (t == "f32") return kR32F;
  if (t == "f16") return kR16F;
  if (t == "bf16") return kR16BF;
  return -1;
}
int TypeBytes(int dt) { return dt == kR32F ? 4 : 2; }

class CudaBaseline final : public Baseline {
 public:
  ~CudaBaseline() override {
    if (!api_) return;
    if (handle_) destroy_(handle_);
    for (CUdeviceptr p : scratch_) api_->cuMemFree(p);
    if (start_) api_->cuEventDestroy(start_);
    if (stop_) api_->cuEventDestroy(stop_);
    if (stream_) api_->cuStreamDestroy(stream_);
    if (lib_) dlclose(lib_);
  }

  Status Init(int ordinal) {
    HEXIR_ASSIGN_OR_RETURN(api_, hal::cuda::LoadCudaApi());
    const CudaApi& api = *api_;
    CUdevice dev;
    HEXIR_CUDA_RETURN_IF_ERROR(api, api.cuDeviceGet(&dev, ordinal), "cuDeviceGet(", ordinal, ")");
    HEXIR_CUDA_RETURN_IF_ERROR(api, api.cuDevicePrimaryCtxRetain(&ctx_, dev), "cuDevicePrimaryCtxRetain");
    HEXIR_CUDA_RETURN_IF_ERROR(api, api.cuCtxSetCurrent(ctx_), "cuCtxSetCurrent");
    HEXIR_CUDA_RETURN_IF_ERROR(api, api.cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    HEXIR_CUDA_RETURN_IF_ERROR(api, api.cuEventCreate(&start_, CU_EVENT_DEFAULT), "cuEventCreate");
    HEXIR_CUDA_RETURN_IF_ERROR(api, api.cuEventCreate(&stop_, CU_EVENT_DEFAULT), "cuEventCreate");
    std::vector<std::string> candidates = {"libcublas.so", "libcublas.so.13", "libcublas.so.12",
                                           "libcublas.so.11"};
    glob_t g;
    if (glob("/usr/local/cuda*/lib64/libcublas.so*", 0, nullptr, &g) == 0) {
      for (size_t i = 0; i < g.gl_pathc; ++i) candidates.push_back(g.gl_pathv[i]);
      globfree(&g);
    }
    for (const std::string& c : candidates) {
      lib_ = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (lib_) {
        lib_name_ = c;
        break;
      }
    }
    if (!lib_) {
      cublas_error_ = "libcublas.so* not found (tried libcublas.so, .so.13, .so.12, .so.11, /usr/local/cuda*/lib64)";
      return Status::Ok();
    }
    auto create = reinterpret_cast<CublasCreateFn>(dlsym(lib_, "cublasCreate_v2"));
    destroy_ = reinterpret_cast<CublasDestroyFn>(dlsym(lib_, "cublasDestroy_v2"));
    auto set_stream = reinterpret_cast<CublasSetStreamFn>(dlsym(lib_, "cublasSetStream_v2"));
    gemm_ = reinterpret_cast<CublasGemmExFn>(dlsym(lib_, "cublasGemmEx"));
    if (!create || !destroy_ || !set_stream || !gemm_) {
      cublas_error_ = lib_name_ + " lacks cublasCreate_v2/cublasGemmEx";
      gemm_ = nullptr;
      return Status::Ok();
    }
    if (int rc = create(&handle_); rc != 0) {
      cublas_error_ = "cublasCreate_v2 failed with status " + std::to_string(rc);
      handle_ = nullptr;
      gemm_ = nullptr;
      return Status::Ok();
    }
    set_stream(handle_, stream_);
    return Status::Ok();
  }

  std::string name() const override {
    return gemm_ ? "cuBLAS (" + lib_name_ + ")" : "cuBLAS unavailable: " + cublas_error_;
  }

  StatusOr<double> TimeGemm(const MatmulShape& s, std::string* note) override {
    if (!gemm_) return Unavailable("no cuBLAS baseline: ", cublas_error_);
    if (!s.is_static()) return InvalidArgument("matmul shape ", s.ToString(), " is not static");
    int at = DataType(s.lhs), bt = DataType(s.rhs), ct = DataType(s.out);
    if (at < 0 || bt < 0 || ct < 0) return Unimplemented("no cuBLAS GEMM for ", s.ToString());
    (void)note;
    HEXIR_RETURN_IF_ERROR(api_->cuCtxSetCurrent(ctx_) == CUDA_SUCCESS ? Status::Ok()
                                                                        : Internal("cuCtxSetCurrent"));
    HEXIR_ASSIGN_OR_RETURN(CUdeviceptr a, Scratch(0, uint64_t(s.m) * s.k * TypeBytes(at)));
    HEXIR_ASSIGN_OR_RETURN(CUdeviceptr b, Scratch(1, uint64_t(s.k) * s.n * TypeBytes(bt)));
    HEXIR_ASSIGN_OR_RETURN(CUdeviceptr c, Scratch(2, uint64_t(s.m) * s.n * TypeBytes(ct)));
    float alpha = 1.f, beta = 0.f;
    auto launch = [&]() -> Status {
      for (int64_t i = 0; i < s.batch; ++i) {
        // Row-major C = A B is column-major C^T = B^T A^T.
        int rc = gemm_(handle_, kOpN, kOpN, int(s.n), int(s.m), int(s.k), &alpha,
                       reinterpret_cast<void*>(b), bt, int(s.n), reinterpret_cast<void*>(a), at,
                       int(s.k), &beta, reinterpret_cast<void*>(c), ct, int(s.n), kCompute32F,
                       kGemmDefault);
        if (rc != 0) return Internal("cublasGemmEx(", s.ToString(), ") failed with status ", rc);
      }
      return Status::Ok();
    };
    return TimeOnStream(launch);
  }

  StatusOr<double> MeasureCopyGbps(std::string* what) override {
    const uint64_t bytes = uint64_t{512} << 20;
    HEXIR_ASSIGN_OR_RETURN(CUdeviceptr src, Scratch(0, bytes));
    HEXIR_ASSIGN_OR_RETURN(CUdeviceptr dst, Scratch(1, bytes));
    auto copy = [&]() -> Status {
      HEXIR_CUDA_RETURN_IF_ERROR(*api_, api_->cuMemcpyDtoDAsync(dst, src, bytes, stream_),
                                 "cuMemcpyDtoDAsync");
      return Status::Ok();
    };
    HEXIR_ASSIGN_OR_RETURN(double t, TimeOnStream(copy));
    *what = "cuMemcpyDtoD of 512 MiB (CUDA events), read + write bytes";
    return 2.0 * bytes / t / 1e9;
  }

  StatusOr<double> MeasurePeakGflops(std::string* what) override {
    MatmulShape s;
    s.m = s.n = s.k = 8192;
    s.lhs = s.rhs = "bf16";
    s.out = "f32";
    std::string note;
    HEXIR_ASSIGN_OR_RETURN(double t, TimeGemm(s, &note));
    *what = "cuBLAS bf16 GEMM 8192^3 (f32 accumulate), CUDA events";
    return 2.0 * s.m * s.n * s.k / t / 1e9;
  }

 private:
  StatusOr<CUdeviceptr> Scratch(size_t i, uint64_t bytes) {
    if (scratch_.size() <= i) {
      scratch_.resize(i + 1, 0);
      scratch_bytes_.resize(i + 1, 0);
    }
    if (scratch_bytes_[i] < bytes) {
      if (scratch_[i]) api_->cuMemFree(scratch_[i]);
      scratch_[i] = 0;
      HEXIR_CUDA_RETURN_IF_ERROR(*api_, api_->cuMemAlloc(&scratch_[i], bytes), "cuMemAlloc(", bytes, ")");
      scratch_bytes_[i] = bytes;
      // Small finite values (0x3c00 is 1.0 in f16, ~1/128 in bf16; pairs make tiny f32s).
      HEXIR_CUDA_RETURN_IF_ERROR(*api_, api_->cuMemsetD16Async(scratch_[i], 0x3c00, bytes / 2, stream_),
                                 "cuMemsetD16Async");
    }
    return scratch_[i];
  }

  // Warm-up, then enough repetitions between two events for ~50 ms; seconds per repetition.
  StatusOr<double> TimeOnStream(const std::function<Status()>& work) {
    const CudaApi& api = *api_;
    auto measure = [&](int reps) -> StatusOr<double> {
      HEXIR_CUDA_RETURN_IF_ERROR(api, api.cuEventRecord(start_, stream_), "cuEventRecord");
      for (int i = 0; i < reps; ++i) HEXIR_RETURN_IF_ERROR(work());
      HEXIR_CUDA_RETURN_IF_ERROR(api, api.cuEventRecord(stop_, stream_), "cuEventRecord");
      HEXIR_CUDA_RETURN_IF_ERROR(api, api.cuEventSynchronize(stop_), "cuEventSynchronize");
      float ms = 0;
      HEXIR_CUDA_RETURN_IF_ERROR(api, api.cuEventElapsedTime(&ms, start_, stop_), "cuEventElapsedTime");
      return ms / 1e3 / reps;
    };
    HEXIR_ASSIGN_OR_RETURN(double once, measure(1));  // warm-up (library/kernel selection)
    HEXIR_ASSIGN_OR_RETURN(once, measure(1));
    int reps = static_cast<int>(std::min(10000.0, std::max(3.0, 0.05 / std::max(once, 1e-7))));
    return measure(reps);
  }

  const CudaApi* api_ = nullptr;
  CUcontext ctx_ = nullptr;
  CUstream stream_ = nullptr;
  CUevent start_ = nullptr, stop_ = nullptr;
  std::vector<CUdeviceptr> scratch_;
  std::vector<uint64_t> scratch_bytes_;
  void* lib_ = nullptr;
  std::string lib_name_, cublas_error_;
  void* handle_ = nullptr;
  CublasDestroyFn destroy_ = nullptr;
  CublasGemmExFn gemm_ = nullptr;
};

}  // namespace

StatusOr<std::unique_ptr<Baseline>> CreateCudaBaseline(int ordinal) {
  auto b = std::make_unique<CudaBaseline>();
  HEXIR_RETURN_IF_ERROR(b->Init(ordinal));
  return std::unique_ptr<Baseline>(std::move(b));
}

}  // namespace hexir::tools::bench
