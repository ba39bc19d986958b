// ONNX backend node conformance runner (Debian libonnx-testdata).
//
// For every test directory (model.onnx + test_data_set_0/{input,output}_*.pb): import the
// model in-process as function `t<i>`, compile the imported functions in batches into one
// module per batch with hexir-compile (a failing batch is retried one model at a time),
// run each with hexir-run on the .pb inputs, compare with the .pb outputs
// (|a - e| <= atol + rtol * |e|, NaN == NaN, same shape and element type; rtol 1e-3, bf16
// 2^-7: one unit in its last place).
// Prints one table row per test (a failure's known cause first: random outputs, strings,
// self-contradicting test data), failures counted by cause, and the summary line
//   ONNX node tests: N passed, M failed (unsupported: <op types>)
// With --expected=FILE (one test name per line, '#' comments) the exit status is 1 only
// when a listed test does not pass; --write-passing=FILE records the passing tests.
// Under Bazel sharding (TEST_TOTAL_SHARDS, TEST_SHARD_INDEX) shard k runs the tests whose
// index in name order is k modulo the shard count; a listed test missing from the data is
// reported by every shard.
#include <onnx/onnx_pb.h>
// After onnx_pb.h (it defines ONNX_API): SequenceProto and OptionalProto of the test data.
#include <onnx/onnx-data.pb.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <dirent.h>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <vector>

#include "compiler/importers/onnx/Context.h"
#include "compiler/importers/onnx/Importer.h"
#include "tools/common/tensor_io.h"

namespace {

namespace ox = hexir::importers::onnx;
using hexir::tools::HostTensor;

struct Test {
  std::string name, dir;
  std::string function;       // t<i>
  std::string mlir;           // imported function text
  std::vector<std::string> inputs;   // .npy paths
  std::vector<HostTensor> expected;
  std::string status = "pass";  // pass | unsupported | import | compile | run | mismatch
  std::string detail;
  std::string module;
};

struct Cmd {
  int code;
  std::string out;
};

Cmd Run(const std::string& cmd) {
  Cmd r{-1, ""};
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  int st = pclose(p);
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

std::vector<std::string> ListDir(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') names.push_back(e->d_name);
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

int32_t HalType(const std::string& et) {
  static const std::map<std::string, int32_t> m = {{"f32", 1}, {"f16", 2}, {"bf16", 3}, {"f64", 4},
                                                   {"i8", 16}, {"i16", 17}, {"i32", 18}, {"i64", 19},
                                                   {"i1", 20}};
  auto it = m.find(et);
  return it == m.end() ? 0 : it->second;
}

bool ReadProto(const std::string& path, google::protobuf::Message* m, std::string* err) {
  std::ifstream in(path, std::ios::binary);
  if (in && m->ParseFromIstream(&in)) return true;
  *err = "cannot parse " + path;
  return false;
}

// The tensors of a sequence or optional value of the test data, in order; *has_value is false
// for an empty optional. False (with *err) when it cannot be read.
bool ListElements(const ::onnx::TypeProto& type, const std::string& path, std::vector<::onnx::TensorProto>* out,
                  bool* has_value, std::string* err) {
  *has_value = true;
  if (type.has_sequence_type()) {
    ::onnx::SequenceProto seq;
    if (!ReadProto(path, &seq, err)) return false;
    out->assign(seq.tensor_values().begin(), seq.tensor_values().end());
    return true;
  }
  ::onnx::OptionalProto opt;
  if (!ReadProto(path, &opt, err)) return false;
  *has_value = opt.has_tensor_value() || opt.has_sequence_value();
  if (opt.has_tensor_value()) out->push_back(opt.tensor_value());
  else if (opt.has_sequence_value())
    out->assign(opt.sequence_value().tensor_values().begin(), opt.sequence_value().tensor_values().end());
  return true;
}

bool IsList(const ::onnx::TypeProto& type) { return type.has_sequence_type() || type.has_optional_type(); }

// Hexir imports sequences and optionals as compile-time lists: a graph input of such a type
// becomes one tensor input per element of the test's value (`<name>.<k>`) and nodes at the
// front of the graph that rebuild it (SequenceConstruct / SequenceEmpty, Optional). Fills
// *data with the tensors of the rewritten graph's inputs, in order.
bool ExpandListInputs(::onnx::ModelProto* model, const std::string& set, std::vector<::onnx::TensorProto>* data,
                      std::string* err) {
  ::onnx::GraphProto* g = model->mutable_graph();
  ::onnx::GraphProto rebuilt = *g;
  rebuilt.clear_input();
  rebuilt.clear_node();
  // Models of IR version < 4 list their initializers among the graph inputs too; those are
  // not fed (the test data numbers only the others) and stay initializers.
  std::set<std::string> initializers;
  for (const auto& init : g->initializer()) initializers.insert(init.name());
  int fed = 0;
  for (int i = 0; i < g->input_size(); ++i) {
    const ::onnx::ValueInfoProto& in = g->input(i);
    if (initializers.count(in.name())) continue;
    std::string pb = set + "/input_" + std::to_string(fed++) + ".pb";
    if (!IsList(in.type())) {
      *rebuilt.add_input() = in;
      ::onnx::TensorProto t;
      if (Exists(pb) && !ReadProto(pb, &t, err)) return false;
      data->push_back(t);
      continue;
    }
    std::vector<::onnx::TensorProto> elements;
    bool has_value = true;
    if (!ListElements(in.type(), pb, &elements, &has_value, err)) return false;
    bool optional = in.type().has_optional_type();
    bool of_sequence = !optional || in.type().optional_type().elem_type().has_sequence_type();
    std::string list = optional ? in.name() + ".value" : in.name();
    ::onnx::NodeProto* build = nullptr;
    if (has_value) {
      build = rebuilt.add_node();
      build->set_op_type(!of_sequence ? "Identity" : elements.empty() ? "SequenceEmpty" : "SequenceConstruct");
      build->add_output(list);
    }
    for (size_t k = 0; k < elements.size(); ++k) {
      auto* v = rebuilt.add_input();
      v->set_name(in.name() + "." + std::to_string(k));
      auto* tt = v->mutable_type()->mutable_tensor_type();
      tt->set_elem_type(elements[k].data_type());
      tt->mutable_shape();
      for (int64_t d : elements[k].dims()) tt->mutable_shape()->add_dim()->set_dim_value(d);
      build->add_input(v->name());
      data->push_back(elements[k]);
    }
    if (optional) {
      auto* wrap = rebuilt.add_node();
      wrap->set_op_type("Optional");
      if (has_value) wrap->add_input(list);
      wrap->add_output(in.name());
    }
  }
  for (const auto& n : g->node()) *rebuilt.add_node() = n;
  *g = std::move(rebuilt);
  return true;
}

// `declared`: the graph input's or output's ONNX element type. ONNX 1.12's generator saved
// bf16 data as UINT16 tensors of the same bits (NumPy has no bf16): read those as bf16.
bool LoadTensor(const ::onnx::TensorProto& t, int declared, HostTensor* out, std::string* err) {
  ox::Context c;
  auto v = c.FromTensorProto(t);
  if (!v.ok()) {
    *err = v.status().message();
    return false;
  }
  out->element_type = HalType(v->et);
  if (declared == ::onnx::TensorProto::BFLOAT16 && t.data_type() == ::onnx::TensorProto::UINT16)
    out->element_type = HalType("bf16");
  out->dims.clear();
  for (const ox::Dim& d : v->shape) out->dims.push_back(d.v);
  out->bytes.assign(v->raw.begin(), v->raw.end());
  return true;
}

std::string Compare(const HostTensor& a, const HostTensor& e, double rtol, double atol) {
  if (a.element_type != e.element_type) return "element type differs";
  if (a.dims != e.dims) return "shape differs";
  for (int64_t i = 0; i < e.element_count(); ++i) {
    double x = hexir::tools::ElementAsDouble(a, i), y = hexir::tools::ElementAsDouble(e, i);
    if (std::isnan(x) && std::isnan(y)) continue;
    if (std::isinf(y) && x == y) continue;
    if (!(std::fabs(x - y) <= atol + rtol * std::fabs(y))) {
      std::ostringstream s;
      s << "element " << i << ": got " << x << ", expected " << y;
      return s.str();
    }
  }
  return "";
}

// This process's part of the tests under Bazel's test sharding (one shard of one otherwise).
struct Shard {
  size_t index = 0, count = 1;
};

Shard ShardFromEnvironment() {
  Shard shard;
  const char* total = std::getenv("TEST_TOTAL_SHARDS");
  const char* index = std::getenv("TEST_SHARD_INDEX");
  if (total == nullptr || index == nullptr || std::atoi(total) < 1) return shard;
  shard.count = size_t(std::atoi(total));
  shard.index = size_t(std::atoi(index)) % shard.count;
  // Tells Bazel that this runner shards (it then does not run every test in every shard).
  if (const char* status = std::getenv("TEST_SHARD_STATUS_FILE")) std::ofstream(status).flush();
  return shard;
}

std::string UnsupportedOp(const std::string& message) {
  // Importer messages look like "node 'n' (op Foo): ...".
  size_t p = message.find("(op ");
  if (p == std::string::npos) return "";
  size_t e = message.find(')', p);
  return message.substr(p + 4, e - p - 4);
}

// Why a test cannot pass whatever the importer does, by test name prefix: its expected data is
// random, uses strings, or contradicts its own model. Other failures have no entry ("").
std::string KnownCause(const std::string& test) {
  static const std::pair<const char*, const char*> kCauses[] = {
      {"test_adam_multiple", "self-contradicting test data (the node has no epsilon, its data used 1e-2)"},
      {"test_bernoulli", "random outputs"},
      {"test_cast_FLOAT_to_STRING", "strings"},
      {"test_cast_STRING_to_FLOAT", "strings"},
      {"test_castlike_BFLOAT16_to_FLOAT", "self-contradicting test data (`like` is [1], the model declares [3, 4])"},
      {"test_castlike_FLOAT_to_BFLOAT16", "self-contradicting test data (`like` is [1], the model declares [3, 4])"},
      {"test_castlike_FLOAT_to_STRING", "strings"},
      {"test_castlike_STRING_to_FLOAT", "strings"},
      {"test_strnormalizer", "strings"},
      {"test_training_dropout", "random outputs"},
  };
  for (const auto& [prefix, cause] : kCauses)
    if (test.rfind(prefix, 0) == 0) return cause;
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  // The backend test categories: one op each (node), PyTorch 0.3's module and operator exports
  // (opset 6 and 9, initializers listed as graph inputs) and small whole models (simple).
  const std::string root = "/usr/share/libonnx-testdata/data";
  std::vector<std::string> data = {root + "/node", root + "/pytorch-converted", root + "/pytorch-operator",
                                   root + "/simple"};
  std::string compile = "tools/hexir-compile/hexir-compile", run = "tools/hexir-run/hexir-run";
  std::string work = "/tmp/hexir-onnx-node", expected_file, write_passing, filter;
  size_t batch = 40;
  bool quiet = false;
  CLI::App app{"ONNX node conformance runner"};
  app.add_option("--data", data, "folders of test folders (repeatable; a test outside the first is named "
                                 "<folder>/<test>)");
  app.add_option("--hexir-compile", compile);
  app.add_option("--hexir-run", run);
  app.add_option("--work", work, "scratch folder");
  app.add_option("--expected", expected_file, "tests that must pass");
  app.add_option("--write-passing", write_passing, "write the passing tests here");
  app.add_option("--filter", filter, "only tests whose name contains this");
  app.add_option("--batch", batch, "models per compiled module");
  app.add_flag("--quiet", quiet, "print failing rows only");
  CLI11_PARSE(app, argc, argv);
  if (!Exists(data.front())) {
    std::printf("HEXIR_SKIPPED: no ONNX node test data at %s (install libonnx-testdata)\n", data.front().c_str());
    return 0;
  }
  Run("rm -rf " + work + " && mkdir -p " + work);

  const Shard shard = ShardFromEnvironment();
  std::set<std::string> found;  // every test of the data (and --filter), in any shard
  std::vector<Test> tests;
  std::vector<std::pair<std::string, std::string>> named_dirs;  // (test name, folder)
  for (size_t k = 0; k < data.size(); ++k) {
    std::string category = data[k].substr(data[k].find_last_of('/') + 1);
    for (const std::string& dir_name : ListDir(data[k]))
      named_dirs.emplace_back(k == 0 ? dir_name : category + "/" + dir_name, data[k] + "/" + dir_name);
  }
  for (const auto& [name, dir] : named_dirs) {
    if (!filter.empty() && name.find(filter) == std::string::npos) continue;
    if (!Exists(dir + "/model.onnx") || !Exists(dir + "/test_data_set_0")) continue;
    found.insert(name);
    if ((found.size() - 1) % shard.count != shard.index) continue;
    Test t;
    t.name = name;
    t.dir = dir;
    t.function = "t" + std::to_string(tests.size());
    tests.push_back(t);
  }

  // Import and load data.
  std::map<std::string, int> unsupported_ops;  // op types the importer does not lower
  std::map<std::string, int> limited_ops;      // lowered, but not this attribute/type/operand
  for (Test& t : tests) {
    std::ifstream in(t.dir + "/model.onnx", std::ios::binary);
    ::onnx::ModelProto model;
    if (!model.ParseFromIstream(&in)) {
      t.status = "import";
      t.detail = "cannot parse model.onnx";
      continue;
    }
    std::string set = t.dir + "/test_data_set_0";
    std::vector<::onnx::TensorProto> input_data;  // one per graph input of `model` after expansion
    std::string err;
    if (!ExpandListInputs(&model, set, &input_data, &err)) {
      t.status = "unsupported";
      t.detail = "input data: " + err;
      continue;
    }
    ox::ImportOptions opts;
    opts.entry_name = t.function;
    auto text = ox::ImportOnnxFunction(model, opts);
    std::set<int> folded;  // graph inputs turned into initializers
    if (!text.ok() && (text.status().message().find("must be a constant") != std::string::npos ||
                       text.status().message().find("computed from shapes") != std::string::npos)) {
      // Hexir needs shape operands (Reshape shapes, pads, axes...) at compile time: retry with
      // the test's integer inputs folded into the model as initializers.
      ::onnx::ModelProto folded_model = model;
      for (int i = 0; i < model.graph().input_size(); ++i) {
        const auto& in = model.graph().input(i);
        int et = in.type().tensor_type().elem_type();
        // integer inputs (shapes, axes) and short vectors (depth, scales)
        if (i >= static_cast<int>(input_data.size())) continue;
        ::onnx::TensorProto tp = input_data[i];
        int64_t elements = 1;
        for (int64_t d : tp.dims()) elements *= d;
        if (et != ::onnx::TensorProto::INT64 && et != ::onnx::TensorProto::INT32 && elements > 8)
          continue;
        tp.set_name(in.name());
        *folded_model.mutable_graph()->add_initializer() = tp;
        folded.insert(i);
      }
      if (!folded.empty()) {
        auto retry = ox::ImportOnnxFunction(folded_model, opts);
        if (retry.ok() || UnsupportedOp(retry.status().message()) != UnsupportedOp(text.status().message()) ||
            retry.status().message() != text.status().message())
          text = std::move(retry);
      }
    }
    if (!text.ok()) {
      t.status = "unsupported";
      t.detail = text.status().message();
      std::string op = UnsupportedOp(t.detail);
      if (!op.empty())
        (t.detail.find("unsupported op type") != std::string::npos ? unsupported_ops : limited_ops)[op]++;
      continue;
    }
    t.mlir = *text;
    for (int i = 0; i < static_cast<int>(input_data.size()); ++i) {
      if (folded.count(i)) continue;
      HostTensor h;
      int declared = i < model.graph().input_size() ? model.graph().input(i).type().tensor_type().elem_type() : 0;
      if (!LoadTensor(input_data[i], declared, &h, &err) || h.element_type == 0) {
        t.status = "unsupported";
        t.detail = "input data: " + err;
        break;
      }
      std::string path = work + "/" + t.function + "_in" + std::to_string(i) + ".npy";
      if (!hexir::tools::WriteNpy(path, h).ok()) {
        t.status = "run";
        t.detail = "cannot write " + path;
      }
      t.inputs.push_back(path);
    }
    // A sequence or optional output is its elements, in order (the imported results).
    for (int i = 0; t.status == "pass" && Exists(set + "/output_" + std::to_string(i) + ".pb"); ++i) {
      std::string pb = set + "/output_" + std::to_string(i) + ".pb";
      const ::onnx::TypeProto* type = i < model.graph().output_size() ? &model.graph().output(i).type() : nullptr;
      std::vector<::onnx::TensorProto> tensors;
      bool has_value = true, read;
      if (type && IsList(*type)) {
        read = ListElements(*type, pb, &tensors, &has_value, &err);
      } else {
        tensors.resize(1);
        read = ReadProto(pb, &tensors[0], &err);
      }
      int declared = type && type->has_tensor_type() ? type->tensor_type().elem_type() : 0;
      for (size_t k = 0; read && k < tensors.size(); ++k) {
        HostTensor h;
        if (!LoadTensor(tensors[k], declared, &h, &err) || h.element_type == 0) read = false;
        else t.expected.push_back(h);
      }
      if (!read) {
        t.status = "unsupported";
        t.detail = "output data: " + err;
      }
    }
  }

  // Compile in batches; a failing batch is compiled one model at a time.
  std::vector<Test*> ready;
  for (Test& t : tests)
    if (t.status == "pass") ready.push_back(&t);
  auto compile_group = [&](const std::vector<Test*>& group, const std::string& stem) {
    std::string src = work + "/" + stem + ".mlir", out = work + "/" + stem + ".vmfb";
    std::ofstream f(src);
    f << "module {\n";
    for (Test* t : group) f << t->mlir;
    f << "}\n";
    f.close();
    Cmd r = Run(compile + " " + src + " --target=cpu -o " + out);
    if (r.code != 0) return r.out;
    for (Test* t : group) t->module = out;
    return std::string();
  };
  for (size_t i = 0; i < ready.size(); i += batch) {
    std::vector<Test*> group(ready.begin() + i, ready.begin() + std::min(ready.size(), i + batch));
    if (compile_group(group, "batch" + std::to_string(i)).empty()) continue;
    for (Test* t : group) {
      std::string err = compile_group({t}, t->function);
      if (!err.empty()) {
        t->status = "compile";
        size_t p = err.find("error:");
        t->detail = err.substr(p == std::string::npos ? 0 : p, 300);
      }
    }
  }

  // Run and compare.
  for (Test* t : ready) {
    if (t->status != "pass") continue;
    std::string cmd = run + " --module=" + t->module + " --device=cpu --cpu-threads=0 --function=" + t->function;
    for (const std::string& in : t->inputs) cmd += " --input=@" + in;
    std::vector<std::string> outs;
    for (size_t j = 0; j < t->expected.size(); ++j) {
      outs.push_back(work + "/" + t->function + "_out" + std::to_string(j) + ".npy");
      cmd += " --output=@" + outs.back();
    }
    Cmd r = Run(cmd);
    if (r.code != 0) {
      t->status = "run";
      t->detail = r.out.substr(0, 300);
      continue;
    }
    for (size_t j = 0; j < outs.size(); ++j) {
      auto got = hexir::tools::ReadNpy(outs[j]);
      // bf16 results within one unit in the last place (2^-7 relative): ONNX 1.12's reference
      // Cast truncates f32 to bf16, Hexir (like onnxruntime and later ONNX) rounds to nearest.
      double rtol = t->expected[j].element_type == HalType("bf16") ? 1.0 / 128 : 1e-3;
      std::string diff = got.ok() ? Compare(*got, t->expected[j], rtol, 1e-5) : got.status().ToString();
      if (!diff.empty()) {
        t->status = "mismatch";
        t->detail = "output " + std::to_string(j) + ": " + diff;
        break;
      }
    }
  }

  // Report.
  std::set<std::string> expected;
  if (!expected_file.empty()) {
    std::ifstream in(expected_file);
    if (!in) {
      std::printf("error: cannot read %s\n", expected_file.c_str());
      return 1;
    }
    std::string line;
    while (std::getline(in, line))
      if (!line.empty() && line[0] != '#') expected.insert(line);
  }
  int passed = 0, failed = 0;
  std::vector<std::string> regressions;
  std::map<std::string, int> by_status, by_cause;
  std::printf("%-60s %-11s %s\n", "test", "status", "detail");
  for (const Test& t : tests) {
    bool ok = t.status == "pass";
    ok ? ++passed : ++failed;
    by_status[t.status]++;
    if (!ok && expected.count(t.name)) regressions.push_back(t.name);
    std::string cause = ok ? "" : KnownCause(t.name);
    if (!ok) by_cause[cause.empty() ? "other" : cause.substr(0, cause.find(" ("))]++;
    if (quiet && ok) continue;
    std::string detail = cause.empty() ? t.detail : "[" + cause + "] " + t.detail;
    std::replace(detail.begin(), detail.end(), '\n', ' ');
    std::printf("%-60s %-11s %s\n", t.name.c_str(), t.status.c_str(), detail.substr(0, 160).c_str());
  }
  if (!write_passing.empty()) {
    std::ofstream out(write_passing);
    out << "# ONNX backend tests (libonnx-testdata 1.12: node, pytorch-converted, pytorch-operator, simple) that "
           "pass; tests/onnx/README.md explains.\n";
    for (const Test& t : tests)
      if (t.status == "pass") out << t.name << "\n";
  }
  std::printf("\nby status:");
  for (const auto& [s, n] : by_status) std::printf(" %s=%d", s.c_str(), n);
  std::printf("\nfailures by cause:");
  for (const auto& [c, n] : by_cause) std::printf(" %s=%d", c.c_str(), n);
  std::string ops;
  for (const auto& [op, n] : unsupported_ops) ops += (ops.empty() ? "" : ", ") + op;
  std::string limited;
  for (const auto& [op, n] : limited_ops) limited += (limited.empty() ? "" : ", ") + op;
  std::printf("\nops failing on an unsupported attribute, element type or runtime operand: %s",
              limited.c_str());
  std::printf("\nONNX node tests: %d passed, %d failed (unsupported: %s)\n", passed, failed, ops.c_str());
  for (const std::string& r : regressions) std::printf("REGRESSION: %s no longer passes\n", r.c_str());
  bool missing = false;
  for (const std::string& name : expected) {
    if (found.count(name)) continue;
    std::printf("REGRESSION: %s is listed as passing but was not found\n", name.c_str());
    missing = true;
  }
  return regressions.empty() && (!missing || !filter.empty()) ? 0 : 1;
}
