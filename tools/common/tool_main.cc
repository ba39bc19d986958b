#include "tools/common/tool_main.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <string>

namespace hexir::tools {
namespace {

const char* g_tool = "hexir";

// What an escaped exception becomes: bad_alloc is an input asking for too much memory.
Status FromException(std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::bad_alloc& x) {
    return ResourceExhausted("out of memory (", x.what(), "): an input or flag asks for more "
                             "memory than this machine can give");
  } catch (const std::exception& x) {
    return Internal("uncaught exception: ", x.what());
  } catch (...) {
    return Internal("uncaught exception of unknown type");
  }
}

void Report(const Status& status) {
  std::fprintf(stderr, "%s: error: %s\n", g_tool, status.ToString().c_str());
  std::fflush(stderr);
}

[[noreturn]] void OnTerminate() {
  std::exception_ptr e = std::current_exception();
  Report(e ? FromException(e) : Internal("std::terminate without an exception"));
  _exit(1);  // no unwinding and no static destructors: other threads may still be running
}

}  // namespace

void InstallLastResortHandler(const char* tool) {
  g_tool = tool;
  std::set_terminate(OnTerminate);
}

int ParseFlags(const char* tool, CLI::App& app, int argc, char** argv) {
  InstallLastResortHandler(tool);
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --help-all, --version
    int exit = app.exit(e);
    if (Status flushed = FlushStdout(); !flushed.ok()) {  // `--help > /dev/full`
      Report(flushed);
      return 1;
    }
    return exit;
  } catch (const CLI::ParseError& e) {
    Report(InvalidArgument(e.what(), " (see --help)"));
    return 1;
  }
  return -1;
}

Status FlushStdout() {
  errno = 0;
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    int err = errno;
    return DataLoss("cannot write standard output: ",
                    err ? std::strerror(err) : "a write failed");
  }
  return Status::Ok();
}

int RunTool(const char* tool, const std::function<Status()>& body) {
  InstallLastResortHandler(tool);
  Status status = Status::Ok();
  try {
    status = body();
  } catch (...) {
    status = FromException(std::current_exception());
  }
  if (!status.ok()) {
    FlushStdout().IgnoreError();
    Report(status);
    return 1;
  }
  Status flushed = FlushStdout();
  if (!flushed.ok()) {
    Report(flushed);
    return 1;
  }
  return 0;
}

}  // namespace hexir::tools
