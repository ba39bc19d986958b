#include "tests/e2e/harness.h"

#include <catch2/catch.hpp>
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <random>

#include "base/half_float.h"
#include "hal/element_type.h"

namespace hexir::e2e {

CommandResult RunCommand(const std::string& command) {
  CommandResult r;
  std::string full = command + " 2>&1";
  FILE* p = popen(full.c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) r.output.append(buf, n);
  int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

std::string TempFile(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/" + name;
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  REQUIRE(out.good());
}

bool CudaAvailable() {
  static const bool available = [] {
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return false;
    using InitFn = int (*)(unsigned);
    using CountFn = int (*)(int*);
    auto init = reinterpret_cast<InitFn>(dlsym(lib, "cuInit"));
    auto count = reinterpret_cast<CountFn>(dlsym(lib, "cuDeviceGetCount"));
    int n = 0;
    return init && count && init(0) == 0 && count(&n) == 0 && n > 0;
  }();
  return available;
}

void RequireDevice(const std::string& device) {
  if (device == "cuda" && !CudaAvailable()) {
    throw DeviceUnavailable{"no CUDA device on this machine (libcuda.so.1 absent or no GPU)"};
  }
}

tools::HostValue Tensor(tools::HostTensor t) {
  tools::HostValue v;
  v.kind = tools::HostValue::Kind::kTensor;
  v.tensor = std::move(t);
  return v;
}

tools::HostValue I64Scalar(int64_t x) {
  tools::HostValue v;
  v.kind = tools::HostValue::Kind::kInt;
  v.scalar_type = static_cast<int32_t>(hal::ElementType::kI64);
  v.i = x;
  return v;
}

tools::HostValue F32Scalar(double x) {
  tools::HostValue v;
  v.kind = tools::HostValue::Kind::kFloat;
  v.scalar_type = static_cast<int32_t>(hal::ElementType::kF32);
  v.f = x;
  return v;
}

std::unique_ptr<tools::Session> OpenOrDie(const std::string& module, const std::string& device,
                                          int cpu_threads) {
  RequireDevice(device);
  tools::InvocationOptions options;
  options.device_uri = device;
  options.cpu_threads = cpu_threads;
  auto session = tools::Session::Open(module, options);
  INFO(session.status().ToString());
  REQUIRE(session.ok());
  return std::move(session).value();
}

std::vector<tools::HostValue> CallOrDie(tools::Session& session, const std::string& name,
                                        const std::vector<tools::HostValue>& inputs) {
  auto fn = session.LookupFunction(name);
  INFO(fn.status().ToString());
  REQUIRE(fn.ok());
  std::vector<tools::HostValue> results;
  Status st = session.Call(*fn, inputs, &results);
  INFO(st.ToString());
  REQUIRE(st.ok());
  return results;
}

std::string HexirRun() { return "tools/hexir-run/hexir-run"; }
std::string HexirCompile() { return "tools/hexir-compile/hexir-compile"; }

// The first 8 hex digits of the source's and flags' FNV-1a digest: part of a saved module's file
// name, so two tests that give one name to different programs (compiled_calls_test and
// launch_optimizations_test both named theirs "dynamic_matmul") do not overwrite each other's
// module in one HEXIR_SAVE_MODULES_DIR (on the GPU machine one of them then ran the other's).
std::string SourceDigest(const std::string& text) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return std::string(hex, 8);
}

std::string CompileOrDie(const std::string& mlir_source, const std::string& name,
                         const std::string& target, const std::string& extra_flags) {
  std::string file = name + "." + SourceDigest(extra_flags + "\n" + mlir_source) + "." + target + ".vmfb";
  if (const char* dir = std::getenv("HEXIR_PRECOMPILED_DIR")) {
    return std::string(dir) + "/" + file;
  }
  const char* extra = std::getenv("HEXIR_COMPILE_FLAGS");  // e.g. --cpu=x86-64-v3 for another host
  const std::string flags = (extra ? std::string(" ") + extra : "") + " " + extra_flags;
  // The same call again (every test case of a file compiling its module) reuses the module.
  static std::map<std::string, std::string> compiled;  // name, target, flags, source -> module
  const std::string key = file + "\n" + flags + "\n" + mlir_source;
  if (auto it = compiled.find(key); it != compiled.end() && access(it->second.c_str(), R_OK) == 0) {
    return it->second;
  }
  std::string src = TempFile(name + ".mlir");
  std::string out = TempFile(file);
  WriteFile(src, mlir_source);
  CommandResult r = RunCommand(HexirCompile() + " " + src + " --target=" + target + " -o " + out + flags);
  INFO("hexir-compile output:\n" << r.output);
  REQUIRE(r.exit_code == 0);
  if (const char* dir = std::getenv("HEXIR_SAVE_MODULES_DIR")) {
    REQUIRE(RunCommand("cp " + out + " " + dir + "/" + file).exit_code == 0);
  }
  compiled[key] = out;
  return out;
}

std::vector<tools::HostTensor> RunOrDie(const std::string& module, const std::string& function,
                                        const std::vector<tools::HostTensor>& inputs,
                                        int result_count, const std::string& device,
                                        const std::string& extra_flags) {
  RequireDevice(device);
  static int counter = 0;
  std::string cmd = HexirRun() + " --module=" + module + " --device=" + device +
                    " --function=" + function + " " + extra_flags;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::string path = TempFile("in" + std::to_string(counter) + "_" + std::to_string(i) + ".npy");
    REQUIRE(tools::WriteNpy(path, inputs[i]).ok());
    cmd += " --input=@" + path;
  }
  std::vector<std::string> outs;
  for (int i = 0; i < result_count; ++i) {
    outs.push_back(TempFile("out" + std::to_string(counter) + "_" + std::to_string(i) + ".npy"));
    cmd += " --output=@" + outs.back();
  }
  ++counter;
  CommandResult r = RunCommand(cmd);
  INFO("command: " << cmd << "\noutput:\n" << r.output);
  REQUIRE(r.exit_code == 0);
  std::vector<tools::HostTensor> results;
  for (const std::string& path : outs) {
    auto t = tools::ReadNpy(path);
    REQUIRE(t.ok());
    results.push_back(std::move(*t));
  }
  return results;
}

tools::HostTensor ZerosF32(std::vector<int64_t> dims) {
  tools::HostTensor t;
  t.element_type = static_cast<int32_t>(hal::ElementType::kF32);
  t.dims = std::move(dims);
  t.bytes.assign(static_cast<size_t>(t.element_count() * 4), 0);
  return t;
}

tools::HostTensor RandomF32(std::vector<int64_t> dims, unsigned seed, float lo, float hi) {
  tools::HostTensor t = ZerosF32(std::move(dims));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  float* p = F32(t);
  for (int64_t i = 0; i < t.element_count(); ++i) p[i] = dist(rng);
  return t;
}

void RequireNoOneThreadKernel(const std::string& module, size_t expected_kernels) {
  CommandResult r = RunCommand("tools/hexir-dump/hexir-dump --no-code " + module + " 2>&1");
  REQUIRE(r.exit_code == 0);
  size_t kernels = 0;
  for (size_t at = r.output.find("attr cuda.block_size."); at != std::string::npos;
       at = r.output.find("attr cuda.block_size.", at + 1)) {
    ++kernels;
    std::string line = r.output.substr(at, r.output.find('\n', at) - at);
    INFO(line);
    CHECK(line.find("= \"1,1,1\"") == std::string::npos);
  }
  CHECK(kernels == expected_kernels);
}

namespace {
// f16 bits of `v`, a multiple of 2^-10 in [-1, 1] (exact in f16: a normal number or zero).
uint16_t ExactF16(double v) {
  if (v == 0) return 0;
  uint16_t sign = v < 0 ? 0x8000 : 0;
  double a = std::fabs(v);
  int e = static_cast<int>(std::floor(std::log2(a)));
  auto mantissa = static_cast<uint16_t>(std::lround((a / std::ldexp(1.0, e) - 1.0) * 1024));
  return sign | static_cast<uint16_t>((e + 15) << 10) | mantissa;
}
}  // namespace

tools::HostTensor DyadicTensor(std::vector<int64_t> dims, unsigned seed, bool f16,
                               std::vector<double>& values) {
  tools::HostTensor r = RandomF32(std::move(dims), seed);
  values.resize(static_cast<size_t>(r.element_count()));
  for (size_t i = 0; i < values.size(); ++i) {
    values[i] = std::round(F32(r)[i] * 1024) / 1024;
    F32(r)[i] = static_cast<float>(values[i]);
  }
  if (!f16) return r;
  tools::HostTensor h;
  h.element_type = static_cast<int32_t>(hal::ElementType::kF16);
  h.dims = r.dims;
  h.bytes.resize(values.size() * 2);
  for (size_t i = 0; i < values.size(); ++i) {
    uint16_t bits = ExactF16(values[i]);
    std::memcpy(h.bytes.data() + 2 * i, &bits, 2);
  }
  return h;
}

tools::HostTensor Narrowed(tools::HostTensor& t, const std::string& element) {
  if (element == "f32") return t;
  const bool half = element == "f16";
  tools::HostTensor n;
  n.element_type = static_cast<int32_t>(half ? hal::ElementType::kF16 : hal::ElementType::kBF16);
  n.dims = t.dims;
  n.bytes.resize(t.element_count() * 2);
  float* values = F32(t);
  for (int64_t i = 0; i < t.element_count(); ++i) {
    uint16_t bits = half ? FloatToHalf(values[i]) : FloatToBF16(values[i]);
    values[i] = half ? HalfToFloat(bits) : BF16ToFloat(bits);
    std::memcpy(&n.bytes[2 * i], &bits, 2);
  }
  return n;
}

float* F32(tools::HostTensor& t) { return reinterpret_cast<float*>(t.bytes.data()); }
const float* F32(const tools::HostTensor& t) { return reinterpret_cast<const float*>(t.bytes.data()); }

void RequireClose(const tools::HostTensor& actual, const tools::HostTensor& expected, double rtol,
                  double atol) {
  REQUIRE(actual.element_type == expected.element_type);
  REQUIRE(actual.dims == expected.dims);
  for (int64_t i = 0; i < expected.element_count(); ++i) {
    double a = tools::ElementAsDouble(actual, i), e = tools::ElementAsDouble(expected, i);
    if (!(std::fabs(a - e) <= atol + rtol * std::fabs(e))) {
      FAIL("element " << i << ": got " << a << ", expected " << e);
    }
  }
}

}  // namespace hexir::e2e
