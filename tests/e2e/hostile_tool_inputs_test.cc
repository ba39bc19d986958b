// Hostile inputs, family "tool flags and inputs": every tool answers a bad flag, an input that
// asks for more memory than there is, a directory given as a file, an absurd thread count, a
// corrupt checkpoint or a full stdout with exit 1 and a message naming the offending thing:
// never an abort (134), a signal, or exit 0 with lost output.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "tests/e2e/harness.h"

namespace hexir::e2e {
namespace {

const char* kAdd = R"mlir(
func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %r = linalg.add ins(%a, %b : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}
)mlir";

const std::string& AddModule() {
  static const std::string module = CompileOrDie(kAdd, "hostile_add");
  return module;
}

const std::string kDump = "tools/hexir-dump/hexir-dump";
const std::string kImport = "tools/hexir-import/hexir-import";
const std::string kBench = "tools/hexir-bench/hexir-bench";
const std::string kGenerate = "tools/hexir-generate/hexir-generate";
const std::string kQuantize = "tools/hexir-quantize/hexir-quantize";

// Exit 1 (not a signal, not 134), "TOOL: error:", and every needle in the output.
void RequireError(const CommandResult& r, const std::string& tool,
                  std::initializer_list<std::string> needles) {
  INFO("output: " << r.output);
  REQUIRE(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains(tool + ": error:"));
  for (const std::string& needle : needles) CHECK_THAT(r.output, Catch::Contains(needle));
}

std::string EmptyDir() {
  std::string dir = TempFile("a_directory");
  mkdir(dir.c_str(), 0755);
  return dir;
}

std::string Run(const std::string& args) {
  return HexirRun() + " --module=" + AddModule() + " " + args + " 2>&1";
}

TEST_CASE("hexir-run: a 100000x100000xf32 input is refused naming the input and its size") {
  RequireError(RunCommand(Run("--input=100000x100000xf32=1 --input=4xf32=1")), "hexir-run",
               {"resource_exhausted", "input '100000x100000xf32'", "needs 40000000000 bytes"});
}

TEST_CASE("hexir-run: a directory given as an .npy input or a parameter file is refused naming the path") {
  std::string dir = EmptyDir();
  RequireError(RunCommand(Run("--input=@" + dir + " --input=4xf32=1")), "hexir-run",
               {"--input #0", "'" + dir + "' is not a regular file"});
  RequireError(RunCommand(Run("--input=@" + dir + "/missing.npy --input=4xf32=1")), "hexir-run",
               {"cannot open '" + dir + "/missing.npy'"});
  // mmap of a directory failed as "internal: cannot mmap '...': No such device".
  RequireError(RunCommand(Run("--parameters=" + dir + " --input=4xf32=1 --input=4xf32=1")), "hexir-run",
               {"invalid_argument: parameter file '" + dir + "' is not a regular file"});
}

// -1 was taken as "the default" (all hardware threads) instead of being refused.
TEST_CASE("hexir-run, hexir-bench and hexir-generate refuse -1 and 100000 CPU threads by name") {
  for (const std::string threads : {"-1", "100000", "two"}) {
    std::string want = "--cpu-threads: " + threads + " is not a thread count in [0, 1024]";
    RequireError(RunCommand(Run("--cpu-threads=" + threads + " --input=4xf32=1 --input=4xf32=2")),
                 "hexir-run", {"invalid_argument", want});
    RequireError(RunCommand(kBench + " --module=" + AddModule() + " --cpu-threads=" + threads +
                            " --input=4xf32=1 --input=4xf32=2 2>&1"),
                 "hexir-bench", {want});
    RequireError(RunCommand(kGenerate + " --module=m --parameters=p --max-tokens=1 --cpu-threads=" +
                            threads + " 2>&1"),
                 "hexir-generate", {want});
  }
}

// Exit 1, the flag and the tools' own words; never CLI11's stock "Value -1 not in range
// 0.000000 to 1797693134862315708145274237317043567980705675258449965989174768031572607800285...".
void RequireFlagRefused(const std::string& command, const std::string& tool, const std::string& needle) {
  CommandResult r = RunCommand(command + " 2>&1");
  RequireError(r, tool, {"invalid_argument", needle});
  CHECK_THAT(r.output, !Catch::Contains("1797693") && !Catch::Contains("not in range"));
}

TEST_CASE("hexir-generate: --max-tokens=-1 is refused as not an integer >= 0") {
  RequireFlagRefused(kGenerate + " --module=m --parameters=p --max-tokens=-1", "hexir-generate",
                     "--max-tokens: -1 is not an integer >= 0");
}

TEST_CASE("hexir-generate: a negative or NaN --temperature is refused as not a finite number >= 0") {
  for (const std::string t : {"-1", "nan", "inf"})
    RequireFlagRefused(kGenerate + " --module=m --parameters=p --max-tokens=1 --temperature=" + t,
                       "hexir-generate", "--temperature: " + t + " is not a finite number >= 0");
}

TEST_CASE("hexir-generate: --top-p and --min-p outside [0, 1] or NaN are refused") {
  for (const std::string flag : {"--top-p", "--min-p"})
    for (const std::string p : {"2", "-0.5", "nan"})
      RequireFlagRefused(kGenerate + " --module=m --parameters=p --max-tokens=1 " + flag + "=" + p,
                         "hexir-generate", flag + ": " + p + " is not a number in [0, 1]");
}

TEST_CASE("hexir-generate: --repetition-penalty=0 is refused as not a finite number > 0") {
  for (const std::string p : {"0", "-2", "inf"})
    RequireFlagRefused(kGenerate + " --module=m --parameters=p --max-tokens=1 --repetition-penalty=" + p,
                       "hexir-generate", "--repetition-penalty: " + p + " is not a finite number > 0");
}

TEST_CASE("hexir-generate: --repeat-last-n=65 is refused as not an integer in [0, 64]") {
  RequireFlagRefused(kGenerate + " --module=m --parameters=p --max-tokens=1 --repeat-last-n=65",
                     "hexir-generate", "--repeat-last-n: 65 is not an integer in [0, 64]");
}

TEST_CASE("hexir-generate: --seed=-1 is refused as not an integer >= 0") {
  RequireFlagRefused(kGenerate + " --module=m --parameters=p --max-tokens=1 --seed=-1", "hexir-generate",
                     "--seed: -1 is not an integer >= 0");
}

TEST_CASE("hexir-import: --parameter-threshold=-1 and --tensor-parallel=0 are refused by name") {
  RequireFlagRefused(kImport + " x.onnx --parameter-threshold=-1", "hexir-import",
                     "--parameter-threshold: -1 is not an integer >= 0");
  RequireFlagRefused(kImport + " x.bin --tensor-parallel=0", "hexir-import",
                     "--tensor-parallel: 0 is not an integer in [1, 4096]");
}

// A non-positive --max-workgroups meant 1 silently.
TEST_CASE("hexir-compile: --max-workgroups=0 is refused by name") {
  std::string source = TempFile("flags_add.mlir");
  WriteFile(source, kAdd);
  std::string compile = HexirCompile() + " " + source + " --target=cpu -o " + TempFile("flags_add.vmfb");
  for (const std::string n : {"0", "-3"})
    RequireFlagRefused(compile + " --max-workgroups=" + n, "hexir-compile",
                       "--max-workgroups: " + n + " is not an integer >= 1");
}

// The row-parallel pipeline model's rates: a rate of 0 or below would divide by zero or
// make every block free.
TEST_CASE("hexir-compile: a non-positive pipeline model rate is refused by name") {
  std::string source = TempFile("flags_rate.mlir");
  WriteFile(source, kAdd);
  std::string compile = HexirCompile() + " " + source + " --target=cpu -o " + TempFile("flags_rate.vmfb");
  RequireFlagRefused(compile + " --chunk-collectives --collective-gbps=0", "hexir-compile",
                     "--collective-gbps: 0 is not a positive number");
  RequireFlagRefused(compile + " --matmul-gflops=-2.5", "hexir-compile",
                     "--matmul-gflops: -2.5 is not a positive number");
  RequireFlagRefused(compile + " --collective-block-us=nan", "hexir-compile",
                     "--collective-block-us: nan is not a positive number");
}

TEST_CASE("every tool answers an unknown flag with exit 1, naming it; --help still exits 0") {
  RequireError(RunCommand(Run("--no-such-flag")), "hexir-run", {"--no-such-flag"});
  RequireError(RunCommand(Run("--repeat=0 --input=4xf32=1 --input=4xf32=1")), "hexir-run", {"--repeat"});
  RequireError(RunCommand(kBench + " --module=" + AddModule() + " --no-such-flag 2>&1"), "hexir-bench",
               {"--no-such-flag"});
  RequireError(RunCommand(kBench + " --module=" + AddModule() + " --cuda-profile=fast 2>&1"),
               "hexir-bench", {"--cuda-profile", "fast"});
  RequireError(RunCommand(kDump + " --no-such-flag " + AddModule() + " 2>&1"), "hexir-dump",
               {"--no-such-flag"});
  RequireError(RunCommand(kImport + " --no-such-flag x.onnx 2>&1"), "hexir-import", {"--no-such-flag"});
  RequireError(RunCommand(kGenerate + " --module=m --parameters=p --max-tokens=1e8 2>&1"), "hexir-generate",
               {"--max-tokens"});
  RequireError(RunCommand(kGenerate + " --max-tokens=5 2>&1"), "hexir-generate", {"--parameters is required"});
  CHECK(RunCommand(HexirRun() + " --help").exit_code == 0);
  CHECK(RunCommand(kGenerate + " --help").exit_code == 0);
}

// CLI11's Range lets NaN through (every comparison with it is false): a NaN timeout ran with
// no deadline, and hexir-generate ran once for --repeat=0.
TEST_CASE("a NaN or infinite timeout and a zero repeat count are refused by every tool that takes them") {
  for (const std::string timeout : {"nan", "inf", "-1"}) {
    RequireError(RunCommand(Run("--timeout=" + timeout + " --input=4xf32=1 --input=4xf32=1")), "hexir-run",
                 {"--timeout: " + timeout + " is not a number in [0.001, 1e+09]"});
    RequireError(RunCommand(kBench + " --module=" + AddModule() + " --timeout=" + timeout +
                            " --input=4xf32=1 --input=4xf32=1 2>&1"),
                 "hexir-bench", {"--timeout: " + timeout + " is not a number"});
    RequireError(RunCommand(kGenerate + " --module=m --parameters=p --max-tokens=1 --timeout=" + timeout + " 2>&1"),
                 "hexir-generate", {"--timeout: " + timeout + " is not a number"});
  }
  RequireError(RunCommand(Run("--repeat=0 --input=4xf32=1 --input=4xf32=1")), "hexir-run",
               {"--repeat: 0 is not a count of at least 1"});
  RequireError(RunCommand(kGenerate + " --module=m --parameters=p --max-tokens=1 --repeat=-1 2>&1"),
               "hexir-generate", {"--repeat: -1 is not a count of at least 1"});
}

TEST_CASE("--help to a full stdout is an error, not a silent exit 0") {
  for (const std::string& tool : {HexirRun(), kBench, kImport, kGenerate}) {
    CommandResult r = RunCommand("{ " + tool + " --help >/dev/full; } 2>&1");
    INFO(tool << ": " << r.output);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.output, Catch::Contains("cannot write standard output: No space left on device"));
  }
}

// The tokenizer was read through an ifstream: a directory threw from inside the read and
// reached the last-resort report as "internal: uncaught exception: basic_filebuf::underflow".
TEST_CASE("hexir-generate: a directory or a missing file as --tokenizer is named") {
  std::string dir = EmptyDir();
  int32_t header[7] = {8, 12, 1, 2, 2, 10, 6};
  std::string bytes(reinterpret_cast<const char*>(header), sizeof(header));
  bytes.resize(1 << 16, '\0');
  std::string checkpoint = TempFile("tokenizer_model.bin");
  WriteFile(checkpoint, bytes);
  RequireError(RunCommand(kGenerate + " --tokenize-only --parameters=" + checkpoint + " --tokenizer=" + dir +
                          " --prompt=hi --max-tokens=1 2>&1"),
               "hexir-generate", {"invalid_argument: tokenizer: '" + dir + "' is not a regular file"});
  RequireError(RunCommand(kGenerate + " --tokenize-only --parameters=" + checkpoint + " --tokenizer=" + dir +
                          "/none.bin --prompt=hi --max-tokens=1 2>&1"),
               "hexir-generate", {"not_found: tokenizer: cannot open '" + dir + "/none.bin'"});
}

TEST_CASE("stdout on a full device is an error, not a silent exit 0") {
  // { TOOL >/dev/full; } 2>&1: the tool's stdout is the full device, its stderr is captured.
  RequireError(RunCommand("{ " + HexirRun() + " --module=" + AddModule() +
                          " --input=4xf32=1 --input=4xf32=2 >/dev/full; } 2>&1"),
               "hexir-run", {"cannot write standard output: No space left on device"});
  RequireError(RunCommand("{ " + kDump + " " + AddModule() + " >/dev/full; } 2>&1"), "hexir-dump",
               {"cannot write standard output"});
  std::string source = TempFile("full_stdout.mlir");
  WriteFile(source, kAdd);
  CommandResult compile =
      RunCommand("{ " + HexirCompile() + " " + source + " --target=cpu -o - >/dev/full; } 2>&1");
  INFO(compile.output);
  CHECK(compile.exit_code == 1);
  CHECK_THAT(compile.output, Catch::Contains("hexir-compile: error: cannot write '-'"));
}

TEST_CASE("hexir-compile: a 40 GB splat constant is a named error, not an abort") {
  std::string source = TempFile("splat40g.mlir");
  WriteFile(source, R"mlir(
func.func @main() -> tensor<100000x100000xf32> {
  %c = arith.constant dense<1.0> : tensor<100000x100000xf32>
  return %c : tensor<100000x100000xf32>
}
)mlir");
  CommandResult r = RunCommand(HexirCompile() + " " + source + " --target=cpu -o " +
                               TempFile("splat40g.vmfb") + " 2>&1");
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("tensor<100000x100000xf32>"));
  CHECK_THAT(r.output, Catch::Contains("needs 10000000000 x 4 bytes"));
}

// LLVM printed a warning per kernel for an unknown CPU, then aborted with "64-bit code requested
// on a subtarget that doesn't support it"; a negative rank count printed a stray byte.
TEST_CASE("hexir-compile: an unknown --cpu and a negative --partition are named") {
  std::string source = TempFile("flags.mlir");
  WriteFile(source, kAdd);
  CommandResult cpu = RunCommand(HexirCompile() + " " + source + " --target=cpu --cpu=pentium9000 -o " +
                                 TempFile("flags.vmfb") + " 2>&1");
  INFO(cpu.output);
  CHECK(cpu.exit_code == 1);
  CHECK_THAT(cpu.output, Catch::Contains("error: unknown CPU 'pentium9000' for "));
  CHECK_THAT(cpu.output, !Catch::Contains("LLVM ERROR"));
  CHECK_THAT(cpu.output, !Catch::Contains("is not a recognized processor"));
  CommandResult ranks = RunCommand(HexirCompile() + " " + source + " --target=cpu --partition=-1 -o " +
                                   TempFile("flags.vmfb") + " 2>&1");
  INFO(ranks.output);
  CHECK(ranks.exit_code == 1);
  CHECK_THAT(ranks.output, Catch::Contains("hexir-compile: error: invalid_argument: --partition: -1 is not an "
                                          "integer >= 0 (0: ranks read at run time)"));
  CHECK_THAT(ranks.output, !Catch::Contains("builtin.module"));
}

// A llama2.c header whose every field is a valid int32 but whose sizes overflow 64 bits.
TEST_CASE("hexir-import: a llama2.c header whose size overflows 64 bits is refused by name") {
  const int32_t big = 0x7fffffff;
  int32_t header[7] = {1 << 30, big, big, 1, 1, big, big};
  std::string bytes(reinterpret_cast<const char*>(header), sizeof(header));
  bytes.resize(4096, '\0');
  std::string path = TempFile("overflow.bin");
  WriteFile(path, bytes);
  RequireError(RunCommand(kImport + " " + path + " -o " + TempFile("overflow.mlir") + " 2>&1"),
               "hexir-import", {"llama2.c checkpoint", "more than 2^63 bytes"});
}

// GGUF v3 with the llama keys, one token_embd tensor and a block count the file cannot hold.
std::string GgufClaimingBlocks(uint32_t blocks) {
  auto raw = [](auto v) { return std::string(reinterpret_cast<const char*>(&v), sizeof(v)); };
  auto str = [&](const std::string& s) { return raw(uint64_t(s.size())) + s; };
  auto u32 = [&](const std::string& key, uint32_t v) { return str(key) + raw(uint32_t(4)) + raw(v); };
  std::string kvs = str("general.architecture") + raw(uint32_t(8)) + str("llama");
  kvs += u32("llama.embedding_length", 8) + u32("llama.feed_forward_length", 12) +
         u32("llama.block_count", blocks) + u32("llama.attention.head_count", 2) +
         u32("llama.context_length", 16);
  std::string file = "GGUF" + raw(uint32_t(3)) + raw(uint64_t(1)) + raw(uint64_t(6)) + kvs;
  file += str("token_embd.weight") + raw(uint32_t(2)) + raw(uint64_t(8)) + raw(uint64_t(10)) +
          raw(uint32_t(0)) + raw(uint64_t(0));
  file.resize(1 << 20, '\0');  // 1 MB
  return file;
}

TEST_CASE("hexir-import: a 1 MB GGUF claiming 10^6 or 2^31-1 blocks fails fast by name") {
  for (uint32_t blocks : {1000000u, 0x7fffffffu}) {
    std::string path = TempFile("blocks.gguf");
    WriteFile(path, GgufClaimingBlocks(blocks));
    CommandResult r = RunCommand("/usr/bin/time -f 'maxrss %M KB' " + kImport + " " + path + " -o " +
                                 TempFile("blocks.mlir") + " 2>&1");
    RequireError(r, "hexir-import",
                 {"'llama.block_count'", StrCat("is ", blocks, ", which needs at least ", 9 * uint64_t(blocks),
                                                " weight tensors, but the file has 1")});
    size_t at = r.output.find("maxrss ");
    REQUIRE(at != std::string::npos);
    CHECK(std::stol(r.output.substr(at + 7)) < 200 * 1024);  // KB: no per-block allocation
  }
}

// The array that does not fit is named by arithmetic, not by listing 2^31 - 1 layers' arrays
// (which ended in std::bad_alloc: "resource_exhausted: out of memory").
TEST_CASE("hexir-import and hexir-quantize: a llama2.c header claiming 2^31-1 layers names the array past the end") {
  int32_t header[7] = {8, 12, 0x7fffffff, 2, 2, 10, 6};
  std::string bytes(reinterpret_cast<const char*>(header), sizeof(header));
  bytes.resize(4096, '\0');
  std::string path = TempFile("layers.bin");
  WriteFile(path, bytes);
  RequireError(RunCommand(kImport + " " + path + " -o " + TempFile("layers.mlir") + " 2>&1"), "hexir-import",
               {"invalid_argument:", "n_layers 2147483647", "'layer117.rms_att' (offset 4092, 32 bytes) does not fit"});
  RequireError(RunCommand(kQuantize + " " + path + " -o " + TempFile("layers.gguf") + " --type=q8_0 2>&1"),
               "hexir-quantize", {"invalid_argument:", "'layer117.rms_att' (offset 4092, 32 bytes) does not fit"});
}

TEST_CASE("hexir-import: a directory or a full stdout is a named error") {
  std::string dir = EmptyDir();
  RequireError(RunCommand(kImport + " " + dir + "/x.bin -o - 2>&1"), "hexir-import", {"x.bin"});
  int32_t header[7] = {8, 12, 1, 2, 2, 10, 6};
  std::string bytes(reinterpret_cast<const char*>(header), sizeof(header));
  bytes.resize(28 + 4 * 2000, '\0');
  std::string ckpt = TempFile("tiny.bin");
  WriteFile(ckpt, bytes);
  RequireError(RunCommand("{ " + kImport + " " + ckpt + " -o - >/dev/full; } 2>&1"), "hexir-import",
               {"cannot write standard output"});
  RequireError(RunCommand(kImport + " " + ckpt + " -o " + dir + " 2>&1"), "hexir-import",
               {"cannot write '" + dir + "'"});
}

TEST_CASE("hexir-import: a small llama gets the device loop by default; --host-loop, --decode-chunk the chunked loop; "
          "--device-loop with --host-loop is refused") {
  int32_t header[7] = {8, 12, 1, 2, 2, 10, 6};  // 0.5 Mi weights at most: SmallDecodeModel
  std::string bytes(reinterpret_cast<const char*>(header), sizeof(header));
  bytes.resize(28 + 4 * 2000, '\0');
  std::string ckpt = TempFile("loop_default.bin");
  WriteFile(ckpt, bytes);
  auto device_loops = [&](const std::string& flags) {
    CommandResult r = RunCommand(kImport + " " + ckpt + " " + flags + " -o - 2>&1");
    INFO(flags << ": " << r.output.substr(0, 400));
    REQUIRE(r.exit_code == 0);
    size_t n = 0;
    for (size_t at = r.output.find("hexir.max_iterations"); at != std::string::npos;
         at = r.output.find("hexir.max_iterations", at + 1))
      ++n;
    CHECK(r.output.find("func.func private @layer(") != std::string::npos);  // kept for the chunks
    return n;
  };
  CHECK(device_loops("") == 1);
  CHECK(device_loops("--device-loop") == 1);
  CHECK(device_loops("--host-loop") == 0);
  CHECK(device_loops("--decode-chunk=4") == 0);
  CHECK(device_loops("--decode-chunk=4 --device-loop") == 1);
  CHECK(device_loops("--kv-cache=f16") == 0);
  RequireError(RunCommand(kImport + " " + ckpt + " --device-loop --host-loop -o - 2>&1"), "hexir-import",
               {"--device-loop and --host-loop exclude each other"});
}

}  // namespace
}  // namespace hexir::e2e
