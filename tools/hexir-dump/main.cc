// hexir-dump: prints a .vmfb module in text form (see dump.h).
//   hexir-dump [--no-code] [--bytes=N] module.vmfb
// Exit status: 0 printed; 1 a bad flag, a module that failed to load, or standard output that
// could not be written (errors go to stderr as "hexir-dump: error: <code>: <message>").
#include <charconv>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#include "tools/common/tool_main.h"
#include "tools/hexir-dump/dump.h"
#include "vm/module.h"

namespace hexir::tools {
namespace {

constexpr char kUsage[] = "usage: hexir-dump [--no-code] [--bytes=N] module.vmfb";

Status Run(int argc, char** argv) {
  DumpOptions options;
  const char* path = nullptr;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--no-code") {
      options.code = false;
    } else if (arg.rfind("--bytes=", 0) == 0) {
      std::string_view value = arg.substr(8);
      auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(),
                                       options.preview_bytes);
      if (ec != std::errc() || end != value.data() + value.size()) {
        return InvalidArgument("--bytes='", value, "': expected a byte count; ", kUsage);
      }
    } else if (arg.empty() || arg[0] == '-' || path) {
      return InvalidArgument("unexpected argument '", arg, "'; ", kUsage);
    } else {
      path = argv[i];
    }
  }
  if (!path) return InvalidArgument("no module given; ", kUsage);
  HEXIR_ASSIGN_OR_RETURN(vm::Ref<vm::Module> module, vm::Module::LoadFromFile(path));
  std::string text = DumpModule(*module, options);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return Status::Ok();
}

}  // namespace
}  // namespace hexir::tools

int main(int argc, char** argv) {
  return hexir::tools::RunTool("hexir-dump", [&] { return hexir::tools::Run(argc, argv); });
}
