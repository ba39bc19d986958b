// The frame every command-line tool's main() runs in, so that no input ends in an abort:
//
//   int main(int argc, char** argv) {
//     CLI::App app{"..."};  ... add options ...
//     if (int exit = hexir::tools::ParseFlags("hexir-run", app, argc, argv); exit >= 0) return exit;
//     return hexir::tools::RunTool("hexir-run", [&] { return Run(flags); });
//   }
//
// Exit status: 0 when the body returned Ok and standard output was written completely; 1 for
// a bad flag, a failed body, an exception that escaped it (std::bad_alloc becomes
// resource_exhausted), or a failed write to standard output (`> /dev/full`). Errors go to
// stderr as "TOOL: error: <code>: <message>". An exception escaping any other thread (a
// worker) ends the process through the same report with exit 1, never with SIGABRT.
#pragma once

#include <functional>

#include "base/status.h"

namespace CLI {
class App;
}

namespace hexir::tools {

// Parses argv with `app`: --help prints and gives 0 (1 when standard output cannot take it); a
// bad or missing flag prints
// "TOOL: error: invalid_argument: <what CLI11 says> (see --help)" and gives 1. Returns the
// exit status to return now, or -1 when parsing succeeded.
int ParseFlags(const char* tool, CLI::App& app, int argc, char** argv);

// Runs `body` under the guards above and returns the exit status.
int RunTool(const char* tool, const std::function<Status()>& body);

// Installs the process-wide last-resort report (std::terminate -> "TOOL: error: ...", exit 1).
// RunTool and ParseFlags call it; a tool that does neither (hexir-compile) calls it first.
void InstallLastResortHandler(const char* tool);

// Flushes standard output: data_loss naming the error when it cannot be written completely.
Status FlushStdout();

}  // namespace hexir::tools
