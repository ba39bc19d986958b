// ONNX sequences and optionals (compiler/importers/onnx/Sequence.cc) as compile-time lists:
// models built in code, imported, compiled and run, with results worked out by hand; a
// sequence output is its elements as results, in order; what needs a run-time length fails
// with an error naming it.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "compiler/importers/onnx/Importer.h"
#include "tests/onnx/test_graph.h"

namespace {

namespace ox = hexir::importers::onnx;
using ox::testing::CompileForCpu;
using ox::testing::Graph;
using ox::testing::RunMainWith;

constexpr int kF32 = ::onnx::TensorProto::FLOAT;
constexpr int kI64 = ::onnx::TensorProto::INT64;
constexpr int kBool = ::onnx::TensorProto::BOOL;

bool Has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

// Imports, compiles and runs `m` on `inputs`; hexir-run's output (empty on failure).
std::string ImportAndRun(const Graph& m, const std::string& name, const std::vector<std::string>& inputs) {
  auto r = ox::ImportOnnxModel(m.model);
  INFO((r.ok() ? std::string() : r.status().message()));
  REQUIRE(r.ok());
  std::string mod = CompileForCpu(*r, name);
  REQUIRE(!mod.empty());
  int code = 0;
  std::string out = RunMainWith(mod, inputs, &code);
  INFO(out);
  REQUIRE(code == 0);
  return out;
}

}  // namespace

TEST_CASE("sequence ops give the tensors of a list worked out by hand, a sequence output as its elements") {
  // s = [a, b]; insert a at the front: [a, a, b]; erase position 1: [a, b]; its length, its
  // last element, the two concatenated [5], that split as [1] and [4] (two results).
  Graph m;
  m.Input("a", {2});
  m.Input("b", {3});
  m.Output("n", {}, kI64);
  m.Output("last", {3});
  m.Output("joined", {5});
  m.Output("parts", {});
  m.InitScalarI("zero", 0);
  m.InitScalarI("one", 1);
  m.InitScalarI("minus_one", -1);
  m.InitI("sizes", {1, 4});
  m.Node("SequenceConstruct", {"a", "b"}, {"s"});
  m.Node("SequenceInsert", {"s", "a", "zero"}, {"s2"});
  m.Node("SequenceErase", {"s2", "one"}, {"s3"});
  m.Node("SequenceLength", {"s3"}, {"n"});
  m.Node("SequenceAt", {"s3", "minus_one"}, {"last"});
  Graph::AttrI(m.Node("ConcatFromSequence", {"s3"}, {"joined"}), "axis", 0);
  m.Node("SplitToSequence", {"joined", "sizes"}, {"parts"});
  // The graph output "parts" is a sequence: give it that type.
  auto* parts = m.g->mutable_output(3);
  parts->mutable_type()->Clear();
  parts->mutable_type()->mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type()->set_elem_type(kF32);
  std::string out = ImportAndRun(m, "sequence_ops", {"2xf32=1 2", "3xf32=3 4 5"});
  CHECK(Has(out, "i64=2\n"));
  CHECK(Has(out, "3xf32=3 4 5\n5xf32=1 2 3 4 5\n1xf32=1\n4xf32=2 3 4 5"));
}

TEST_CASE("SequenceMap runs its body once per element, a tensor operand every time") {
  Graph m;
  m.Input("a", {2});
  m.Input("b", {3});
  m.Input("w", {1});
  m.Output("mapped", {});
  m.Node("SequenceConstruct", {"a", "b"}, {"s"});
  auto* n = m.Node("SequenceMap", {"s", "w"}, {"mapped"});
  auto* body = Graph::AttrGraph(n, "body");
  Graph::Value(body->add_input(), "x", {-1}, kF32);
  Graph::Value(body->add_input(), "scale", {1}, kF32);
  Graph::AddNode(body, "Mul", {"x", "scale"}, {"y"});
  Graph::Value(body->add_output(), "y", {-1}, kF32);
  m.model.mutable_opset_import(0)->set_version(17);
  std::string out = ImportAndRun(m, "sequence_map", {"2xf32=1 2", "3xf32=3 4 5", "1xf32=10"});
  CHECK(Has(out, "2xf32=10 20\n3xf32=30 40 50"));
}

TEST_CASE("optionals are known at import: HasElement is a constant, GetElement of an empty one names it") {
  Graph m;
  m.Input("x", {2});
  m.Output("has", {}, kBool);
  m.Output("has_not", {}, kBool);
  m.Output("value", {2});
  m.Node("Optional", {"x"}, {"full"});
  m.Node("Optional", {}, {"empty"});
  m.Node("OptionalHasElement", {"full"}, {"has"});
  m.Node("OptionalHasElement", {"empty"}, {"has_not"});
  m.Node("OptionalGetElement", {"full"}, {"value"});
  m.model.mutable_opset_import(0)->set_version(15);
  std::string out = ImportAndRun(m, "optionals", {"2xf32=7 8"});
  CHECK(Has(out, "i1=1\ni1=0\n2xf32=7 8"));

  m.Node("OptionalGetElement", {"empty"}, {"nothing"}, "get_empty");
  m.Output("nothing", {2});
  auto r = ox::ImportOnnxModel(m.model);
  REQUIRE(!r.ok());
  CHECK(r.status().message() ==
        "node 'get_empty' (op OptionalGetElement): the optional 'empty' is empty");
}

// A Loop appending its iteration number to a sequence `trips` times, then concatenated.
Graph AppendingLoop(bool trips_known) {
  Graph m;
  m.Output("joined", {3}, kI64);
  if (trips_known) m.InitScalarI("trips", 3);
  else m.Input("trips", {}, kI64);
  auto* go = m.g->add_initializer();
  go->set_name("go");
  go->set_data_type(kBool);
  go->add_int32_data(1);
  m.Node("SequenceEmpty", {}, {"empty"});
  auto* n = m.Node("Loop", {"trips", "go", "empty"}, {"grown"}, "append");
  auto* body = Graph::AttrGraph(n, "body");
  Graph::Value(body->add_input(), "i", {}, kI64);
  Graph::Value(body->add_input(), "cond_in", {}, kBool);
  body->add_input()->set_name("seq_in");
  Graph::AddNode(body, "Identity", {"cond_in"}, {"cond_out"});
  auto* axes = Graph::AddNode(body, "Constant", {}, {"axes"});
  auto* a = axes->add_attribute();
  a->set_name("value_ints");
  a->set_type(::onnx::AttributeProto::INTS);
  a->add_ints(0);
  Graph::AddNode(body, "Unsqueeze", {"i", "axes"}, {"row"});
  Graph::AddNode(body, "SequenceInsert", {"seq_in", "row"}, {"seq_out"});
  Graph::Value(body->add_output(), "cond_out", {}, kBool);
  body->add_output()->set_name("seq_out");
  Graph::AttrI(m.Node("ConcatFromSequence", {"grown"}, {"joined"}), "axis", 0);
  return m;
}

TEST_CASE("a Loop carrying a sequence is unrolled at import; a run-time trip count is an error naming it") {
  std::string out = ImportAndRun(AppendingLoop(true), "sequence_loop", {});
  CHECK(Has(out, "3xi64=0 1 2"));
  auto r = ox::ImportOnnxModel(AppendingLoop(false).model);
  REQUIRE(!r.ok());
  CHECK(r.status().message() ==
        "node 'append' (op Loop): the trip count of a Loop carrying a sequence must be a constant "
        "(initializer or Constant)");
}

TEST_CASE("sequence graph inputs and positions outside the list are errors naming them") {
  Graph m;
  m.Input("x", {2});
  m.Output("y", {2});
  auto* s = m.g->add_input();
  s->set_name("seq");
  s->mutable_type()->mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type()->set_elem_type(kF32);
  m.Node("Identity", {"x"}, {"y"});
  auto r = ox::ImportOnnxModel(m.model);
  REQUIRE(!r.ok());
  CHECK(Has(r.status().message(), "graph input 'seq' is a sequence"));

  Graph far;
  far.Input("x", {2});
  far.Output("y", {2});
  far.InitScalarI("two", 2);
  far.Node("SequenceConstruct", {"x", "x"}, {"s"});
  far.Node("SequenceAt", {"s", "two"}, {"y"}, "at");
  r = ox::ImportOnnxModel(far.model);
  REQUIRE(!r.ok());
  CHECK(r.status().message() == "node 'at' (op SequenceAt): position 2 is outside a sequence of 2 elements");
  Graph tensor_op;
  tensor_op.Input("x", {2});
  tensor_op.Output("y", {2});
  tensor_op.Node("SequenceConstruct", {"x"}, {"s"});
  tensor_op.Node("Relu", {"s"}, {"y"}, "relu");
  r = ox::ImportOnnxModel(tensor_op.model);
  REQUIRE(!r.ok());
  CHECK(r.status().message() == "node 'relu' (op Relu): input 's' is a sequence, not a tensor");
}
