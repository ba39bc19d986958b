// Test helpers shared by the ONNX importer tests: ModelProtos built in code (Graph), the real
// tools run through a shell (Sh), temporary paths and hexir-run's printed results.
#pragma once

#include <onnx/onnx_pb.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/importers/onnx/Importer.h"

namespace hexir::importers::onnx::testing {

struct Graph {
  ::onnx::ModelProto model;
  ::onnx::GraphProto* g;
  Graph() {
    model.set_ir_version(8);
    auto* op = model.add_opset_import();
    op->set_domain("");
    op->set_version(13);
    g = model.mutable_graph();
    g->set_name("test");
  }
  // dims: -1 = dynamic, a `dim_param` of its own ("N0", "N1", ...: independent extents)
  void Input(const std::string& name, std::vector<int64_t> dims, int type = ::onnx::TensorProto::FLOAT) {
    Value(g->add_input(), name, dims, type);
  }
  void Output(const std::string& name, std::vector<int64_t> dims, int type = ::onnx::TensorProto::FLOAT) {
    Value(g->add_output(), name, dims, type);
  }
  static void Value(::onnx::ValueInfoProto* v, const std::string& name, std::vector<int64_t> dims, int type) {
    v->set_name(name);
    auto* tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(type);
    tt->mutable_shape();  // rank 0 when dims is empty
    for (int64_t d : dims) {
      auto* dim = tt->mutable_shape()->add_dim();
      static int next_param = 0;
      if (d < 0) dim->set_dim_param("N" + std::to_string(next_param++));
      else dim->set_dim_value(d);
    }
  }
  void InitF(const std::string& name, std::vector<int64_t> dims, std::vector<float> values) {
    auto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(::onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    for (float v : values) t->add_float_data(v);
  }
  void InitI(const std::string& name, std::vector<int64_t> values) {
    auto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(::onnx::TensorProto::INT64);
    t->add_dims(static_cast<int64_t>(values.size()));
    for (int64_t v : values) t->add_int64_data(v);
  }
  void InitI32(const std::string& name, std::vector<int32_t> values) {  // 1-D int32
    auto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(::onnx::TensorProto::INT32);
    t->add_dims(static_cast<int64_t>(values.size()));
    for (int32_t v : values) t->add_int32_data(v);
  }
  void InitScalarI(const std::string& name, int64_t value) {  // 0-D int64
    auto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(::onnx::TensorProto::INT64);
    t->add_int64_data(value);
  }
  ::onnx::NodeProto* Node(const std::string& op, std::vector<std::string> ins,
                          std::vector<std::string> outs, const std::string& name = "") {
    return AddNode(g, op, ins, outs, name);
  }
  static ::onnx::NodeProto* AddNode(::onnx::GraphProto* graph, const std::string& op,
                                    std::vector<std::string> ins, std::vector<std::string> outs,
                                    const std::string& name = "") {
    auto* n = graph->add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (auto& i : ins) n->add_input(i);
    for (auto& o : outs) n->add_output(o);
    return n;
  }
  static void AttrI(::onnx::NodeProto* n, const std::string& name, int64_t v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void AttrF(::onnx::NodeProto* n, const std::string& name, float v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::FLOAT);
    a->set_f(v);
  }
  static void AttrS(::onnx::NodeProto* n, const std::string& name, const std::string& v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::STRING);
    a->set_s(v);
  }
  static void AttrInts(::onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::INTS);
    for (int64_t i : v) a->add_ints(i);
  }
  // A subgraph attribute (If's branches, Loop's and Scan's body), empty, named `name`.
  static ::onnx::GraphProto* AttrGraph(::onnx::NodeProto* n, const std::string& name) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::GRAPH);
    a->mutable_g()->set_name(name);
    return a->mutable_g();
  }
  // A one-element int64 tensor attribute (ConstantOfShape's value).
  static void AttrTensorI(::onnx::NodeProto* n, const std::string& name, int64_t v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::TENSOR);
    a->mutable_t()->set_data_type(::onnx::TensorProto::INT64);
    a->mutable_t()->add_dims(1);
    a->mutable_t()->add_int64_data(v);
  }
};

inline std::string Sh(const std::string& cmd, int* code) {
  std::string out;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int st = pclose(p);
  *code = WEXITSTATUS(st);
  return out;
}

inline std::string Tmp(const std::string& name) {
  const char* d = std::getenv("TEST_TMPDIR");
  return std::string(d ? d : "/tmp") + "/" + name;
}

inline void Save(const ::onnx::ModelProto& m, const std::string& path) {
  std::ofstream f(path, std::ios::binary);
  REQUIRE(m.SerializeToOstream(&f));
}

inline std::vector<float> ParseFloats(const std::string& line) {  // "2x3xf32=1 2 3 ..."
  std::vector<float> v;
  std::istringstream s(line.substr(line.find('=') + 1));
  float x;
  while (s >> x) v.push_back(x);
  return v;
}

// Compiles MLIR text for the CPU into TEST_TMPDIR/<name>.vmfb; the module path ("" on failure,
// with the compiler's output recorded by INFO).
inline std::string CompileForCpu(const std::string& mlir, const std::string& name) {
  std::string src = Tmp(name + ".mlir"), mod = Tmp(name + ".vmfb");
  std::ofstream(src) << mlir;
  int code = 0;
  std::string out = Sh("tools/hexir-compile/hexir-compile " + src + " --target=cpu -o " + mod, &code);
  INFO(out);
  CHECK(code == 0);
  return code == 0 ? mod : "";
}

// Runs `main` of a module on one input spec ("2x3xf32=1 2 ..."); hexir-run's output line.
inline std::string RunMain(const std::string& module, const std::string& input, int* code) {
  return Sh("tools/hexir-run/hexir-run --module=" + module + " '--input=" + input + "'", code);
}

// Runs `main` on several input specs, in order.
inline std::string RunMainWith(const std::string& module, const std::vector<std::string>& inputs, int* code) {
  std::string cmd = "tools/hexir-run/hexir-run --module=" + module;
  for (const std::string& in : inputs) cmd += " '--input=" + in + "'";
  return Sh(cmd, code);
}

}  // namespace hexir::importers::onnx::testing
