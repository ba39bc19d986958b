// hal/element_type.h against an independent reading of each MLIR spelling: the byte size is the
// bit width of the spelling rounded up to bytes (i1 takes a byte), float-ness is its first letter.
#include "hal/element_type.h"

#include <catch2/catch.hpp>
#include <set>
#include <string>

namespace hexir::hal {
namespace {

TEST_CASE("every element type's byte size and float-ness follow from its MLIR spelling") {
  for (int32_t code : kElementTypeCodes) {
    std::string name(ElementTypeName(code));
    INFO(name);
    REQUIRE(!name.empty());
    bool is_float = name[0] == 'f' || name[0] == 'b';
    int bits = std::stoi(name.substr(name[0] == 'b' ? 2 : 1));
    CHECK(ElementTypeIsFloat(code) == is_float);
    CHECK(ElementTypeByteSize(code) == (bits + 7) / 8);
  }
}

TEST_CASE("element type names and codes map one to one and keep their ABI numbers") {
  std::set<std::string> names;
  for (int32_t code : kElementTypeCodes) {
    CHECK(ElementTypeFromName(ElementTypeName(code)) == code);
    names.insert(std::string(ElementTypeName(code)));
  }
  CHECK(names.size() == std::size(kElementTypeCodes));
  // The bytecode ABI: these numbers are immediates in existing modules.
  CHECK(ElementTypeFromName("f32") == 1);
  CHECK(ElementTypeFromName("bf16") == 3);
  CHECK(ElementTypeFromName("i8") == 16);
  CHECK(ElementTypeFromName("i1") == 20);
}

TEST_CASE("unknown element types have no code, no size and are not floats") {
  CHECK(ElementTypeFromName("ui8") == 0);
  CHECK(ElementTypeFromName("f8E4M3FN") == 0);
  CHECK(ElementTypeByteSize(5) == 0);
  CHECK(!ElementTypeIsFloat(0));
  CHECK(ElementTypeName(99).empty());
}

}  // namespace
}  // namespace hexir::hal
