// hexir-dump: prints a .vmfb module in text form (see dump.h).
//   hexir-dump [--no-code] [--bytes=N] module.vmfb
// Exit status: 0 printed; 1 the module failed to load (the error goes to stderr); 2 usage.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "tools/hexir-dump/dump.h"
#include "vm/module.h"

int main(int argc, char** argv) {
  hexir::tools::DumpOptions options;
  const char* path = nullptr;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--no-code") == 0) {
      options.code = false;
    } else if (std::strncmp(argv[i], "--bytes=", 8) == 0) {
      options.preview_bytes = static_cast<size_t>(std::strtoul(argv[i] + 8, nullptr, 10));
    } else if (argv[i][0] == '-' || path) {
      std::fprintf(stderr, "usage: hexir-dump [--no-code] [--bytes=N] module.vmfb\n");
      return 2;
    } else {
      path = argv[i];
    }
  }
  if (!path) {
    std::fprintf(stderr, "usage: hexir-dump [--no-code] [--bytes=N] module.vmfb\n");
    return 2;
  }
  auto module = hexir::vm::Module::LoadFromFile(path);
  if (!module.ok()) {
    std::fprintf(stderr, "hexir-dump: %s\n", module.status().ToString().c_str());
    return 1;
  }
  std::string text = hexir::tools::DumpModule(**module, options);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}
