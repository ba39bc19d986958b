// Module load time of a large module: `load_benchmark [MiB] [path]` writes a module with one
// rodata segment of MiB mebibytes (default 1024) to path (default /tmp/load_benchmark.vmfb)
// and times Module::LoadFromFile (mmap + header + checksums + verification), best of 3, with
// the file in the page cache. The figures are in vm/README.md ("Performance").
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "vm/module.h"
#include "vm/testing/builder.h"

int main(int argc, char** argv) {
  using namespace hexir;
  const size_t mib = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1024;
  const std::string path = argc > 2 ? argv[2] : "/tmp/load_benchmark.vmfb";
  {
    vm::testing::ModuleBuilder mb("large");
    std::vector<uint8_t> rodata(mib << 20);
    for (size_t i = 0; i < rodata.size(); ++i) rodata[i] = static_cast<uint8_t>(i * 131 + 7);
    mb.AddRodata(std::move(rodata));
    auto& f = mb.AddFunction("f", "_");
    f.Op(vm::Op::Return).L({});
    mb.AddExport("f", f.ordinal());
    auto bytes = mb.Build();
    if (!bytes.ok()) {
      std::fprintf(stderr, "load_benchmark: %s\n", bytes.status().ToString().c_str());
      return 1;
    }
    std::FILE* out = std::fopen(path.c_str(), "wb");
    if (!out || std::fwrite(bytes->data(), 1, bytes->size(), out) != bytes->size() ||
        std::fclose(out) != 0) {
      std::fprintf(stderr, "load_benchmark: cannot write '%s'\n", path.c_str());
      return 1;
    }
  }
  double best = 1e30;
  for (int round = 0; round < 4; ++round) {  // round 0 warms the page cache
    auto start = std::chrono::steady_clock::now();
    auto module = vm::Module::LoadFromFile(path);
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!module.ok()) {
      std::fprintf(stderr, "load_benchmark: %s\n", module.status().ToString().c_str());
      return 1;
    }
    if (round > 0 && seconds < best) best = seconds;
  }
  std::remove(path.c_str());
  std::printf("load %zu MiB module: %.1f ms (best of 3, page cache warm): %.2f GB/s\n", mib,
              best * 1e3, static_cast<double>(mib << 20) / best / 1e9);
  return 0;
}
