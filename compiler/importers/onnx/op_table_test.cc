// The ONNX op table: rows are found by op type and opset, opset ranges split an op whose
// semantics changed, and op types without a row are not found.
#include "compiler/importers/onnx/OpTable.h"

#include <catch2/catch.hpp>

namespace ox = hexir::importers::onnx;

TEST_CASE("an op type is found at every opset from its first version on") {
  const ox::OpLowering* at1 = ox::FindLowering("Add", 1);
  const ox::OpLowering* at21 = ox::FindLowering("Add", 21);
  REQUIRE(at1 != nullptr);
  CHECK(at1 == at21);
  CHECK(std::string(at1->op_type) == "Add");
  CHECK(ox::FindLowering("Celu", 11) == nullptr);  // Celu first appeared in opset 12
  CHECK(ox::FindLowering("Celu", 12) != nullptr);
}

TEST_CASE("an op whose semantics changed has one row per opset range") {
  const ox::OpLowering* clip10 = ox::FindLowering("Clip", 10);
  const ox::OpLowering* clip11 = ox::FindLowering("Clip", 11);
  REQUIRE(clip10 != nullptr);
  REQUIRE(clip11 != nullptr);
  CHECK(clip10 != clip11);
  CHECK(clip10->max_opset == 10);
  CHECK(clip11->min_opset == 11);
  CHECK(ox::FindLowering("Slice", 9) != ox::FindLowering("Slice", 10));
  CHECK(ox::FindLowering("Pad", 10) != ox::FindLowering("Pad", 11));
  CHECK(ox::FindLowering("Reshape", 4) != ox::FindLowering("Reshape", 5));  // the shape an attribute, then an input
}

TEST_CASE("opsets outside every row of an op type find nothing") {
  CHECK(ox::FindLowering("Resize", 9) == nullptr);    // Upsample's opsets
  CHECK(ox::FindLowering("Resize", 19) != nullptr);
  CHECK(ox::FindLowering("Hardmax", 12) == nullptr);  // coerced 2-D form: not lowered
  CHECK(ox::FindLowering("Gelu", 19) == nullptr);     // an op of opset 20
  CHECK(ox::FindLowering("ImageScaler", 10) == nullptr);  // experimental, removed in 10
}

TEST_CASE("op types without a row, and near misses of real ones, find nothing") {
  CHECK(ox::FindLowering("FancyOp", 13) == nullptr);
  CHECK(ox::FindLowering("", 13) == nullptr);
  CHECK(ox::FindLowering("add", 13) == nullptr);
  CHECK(ox::FindLowering("Ad", 13) == nullptr);
  CHECK(ox::FindLowering("Xorr", 13) == nullptr);
  CHECK(ox::FindLowering("Abs", 13) != nullptr);  // first row
  CHECK(ox::FindLowering("Xor", 13) != nullptr);  // last row
}

TEST_CASE("the optimizers are found in the training domain only") {
  const ox::OpLowering* adam = ox::FindLowering("Adam", 1, ox::kTrainingDomain);
  REQUIRE(adam != nullptr);
  CHECK(std::string(adam->op_type) == "Adam");
  CHECK(ox::FindLowering("Momentum", 1, ox::kTrainingDomain) != nullptr);
  CHECK(ox::FindLowering("Adam", 13) == nullptr);                         // not a default-domain op
  CHECK(ox::FindLowering("Add", 1, ox::kTrainingDomain) == nullptr);      // nor the reverse
  CHECK(ox::FindLowering("Add", 13, "ai.onnx") == ox::FindLowering("Add", 13));
  CHECK(ox::FindLowering("Add", 13, "com.example") == nullptr);
}
