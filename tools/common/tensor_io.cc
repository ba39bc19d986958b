#include "tools/common/tensor_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

#include "hal/element_type.h"

namespace hexir::tools {
namespace {

using hal::ElementType;
using hal::ElementTypeByteSize;
using hal::ElementTypeFromName;
using hal::ElementTypeName;

bool IsFloatType(int32_t t) { return hal::ElementTypeIsFloat(t); }

// "f32, f16, ... or i1": every element type of hal/element_types.def.
std::string ElementTypeNames() {
  std::string names;
  for (int32_t code : hal::kElementTypeCodes) {
    if (!names.empty()) names += code == hal::kElementTypeCodes[std::size(hal::kElementTypeCodes) - 1] ? " or " : ", ";
    names += ElementTypeName(code);
  }
  return names;
}

// The switch label of element type `t` (a hal::ElementType enumerator).
constexpr int32_t Code(ElementType t) { return static_cast<int32_t>(t); }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Splits "2x3xf32" into dims {2,3} and type f32; "f32" into {} and f32.
Status ParseType(std::string_view text, std::vector<int64_t>* dims, int32_t* type) {
  dims->clear();
  while (true) {
    size_t x = text.find('x');
    std::string_view part = text.substr(0, x);
    if (x == std::string_view::npos) {
      *type = ElementTypeFromName(part);
      if (*type == 0) {
        return InvalidArgument("unknown element type '", part,
                               "' (expected ", ElementTypeNames(), ")");
      }
      return Status::Ok();
    }
    int64_t d = 0;
    auto [p, ec] = std::from_chars(part.data(), part.data() + part.size(), d);
    if (ec != std::errc() || p != part.data() + part.size() || d < 0) {
      return InvalidArgument("bad dimension '", part, "' in type '", text, "'");
    }
    dims->push_back(d);
    text.remove_prefix(x + 1);
  }
}

Status ParseNumber(std::string_view tok, int32_t type, double* f, int64_t* i) {
  std::string s(tok);
  char* end = nullptr;
  errno = 0;
  if (IsFloatType(type)) {
    *f = std::strtod(s.c_str(), &end);
  } else if (s == "true" || s == "false") {
    *i = s == "true";
    return Status::Ok();
  } else {
    *i = std::strtoll(s.c_str(), &end, 10);
  }
  if (end == s.c_str() || *end != '\0' || errno == ERANGE) {
    return InvalidArgument("'", tok, "' is not a valid ", ElementTypeName(type), " value");
  }
  if (type == Code(ElementType::kI1) && *i != 0 && *i != 1) return InvalidArgument("'", tok, "' is not a valid i1 value (0 or 1)");
  return Status::Ok();
}

void StoreElement(HostTensor& t, int64_t index, double f, int64_t i) {
  uint8_t* p = t.bytes.data() + index * ElementTypeByteSize(t.element_type);
  switch (t.element_type) {
    case Code(ElementType::kF32): { float v = static_cast<float>(f); std::memcpy(p, &v, 4); break; }
    case Code(ElementType::kF16): { uint16_t v = FloatToHalf(static_cast<float>(f)); std::memcpy(p, &v, 2); break; }
    case Code(ElementType::kBF16): { uint16_t v = FloatToBF16(static_cast<float>(f)); std::memcpy(p, &v, 2); break; }
    case Code(ElementType::kF64): std::memcpy(p, &f, 8); break;
    case Code(ElementType::kI8): case Code(ElementType::kI1): { int8_t v = static_cast<int8_t>(i); std::memcpy(p, &v, 1); break; }
    case Code(ElementType::kI16): { int16_t v = static_cast<int16_t>(i); std::memcpy(p, &v, 2); break; }
    case Code(ElementType::kI32): { int32_t v = static_cast<int32_t>(i); std::memcpy(p, &v, 4); break; }
    case Code(ElementType::kI64): std::memcpy(p, &i, 8); break;
  }
}

bool FitsIntType(int64_t v, int32_t type) {
  switch (type) {
    case Code(ElementType::kI8): return v >= INT8_MIN && v <= INT8_MAX;
    case Code(ElementType::kI16): return v >= INT16_MIN && v <= INT16_MAX;
    case Code(ElementType::kI32): return v >= INT32_MIN && v <= INT32_MAX;
    default: return true;
  }
}

std::string FormatFloat(double v, int32_t type) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  std::to_chars_result r = type == Code(ElementType::kF64) ? std::to_chars(buf, buf + sizeof(buf), v)
                                     : std::to_chars(buf, buf + sizeof(buf), static_cast<float>(v));
  return std::string(buf, r.ptr);
}

// Refuses a host buffer larger than this machine's memory before trying to allocate it.
Status CheckHostAllocation(const std::string& what, uint64_t bytes) {
  long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_size <= 0) return Status::Ok();
  uint64_t memory = static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size);
  if (bytes > memory) {
    return ResourceExhausted(what, ": needs ", bytes, " bytes, more than this machine's ",
                             memory, " bytes of memory");
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::string> ReadWholeFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NotFound("cannot open '", path, "': ", std::strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return InvalidArgument("'", path, "' is not a regular file (a directory or a device?)");
  }
  Status fits = CheckHostAllocation(StrCat("'", path, "'"), static_cast<uint64_t>(st.st_size));
  if (!fits.ok()) {
    ::close(fd);
    return fits;
  }
  std::string data(static_cast<size_t>(st.st_size), '\0');
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::read(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = n < 0 ? errno : 0;
      ::close(fd);
      return DataLoss("cannot read '", path, "': ", err ? std::strerror(err) : "the file shrank");
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  return data;
}

int64_t HostTensor::element_count() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

double ElementAsDouble(const HostTensor& t, int64_t i) {
  const uint8_t* p = t.bytes.data() + i * ElementTypeByteSize(t.element_type);
  switch (t.element_type) {
    case Code(ElementType::kF32): { float v; std::memcpy(&v, p, 4); return v; }
    case Code(ElementType::kF16): { uint16_t v; std::memcpy(&v, p, 2); return HalfToFloat(v); }
    case Code(ElementType::kBF16): { uint16_t v; std::memcpy(&v, p, 2); return BF16ToFloat(v); }
    case Code(ElementType::kF64): { double v; std::memcpy(&v, p, 8); return v; }
    case Code(ElementType::kI8): case Code(ElementType::kI1): return static_cast<int8_t>(*p);
    case Code(ElementType::kI16): { int16_t v; std::memcpy(&v, p, 2); return v; }
    case Code(ElementType::kI32): { int32_t v; std::memcpy(&v, p, 4); return v; }
    case Code(ElementType::kI64): { int64_t v; std::memcpy(&v, p, 8); return static_cast<double>(v); }
  }
  return 0;
}

int64_t ElementAsInt(const HostTensor& t, int64_t i) {
  const uint8_t* p = t.bytes.data() + i * ElementTypeByteSize(t.element_type);
  switch (t.element_type) {
    case Code(ElementType::kI8): case Code(ElementType::kI1): return static_cast<int8_t>(*p);
    case Code(ElementType::kI16): { int16_t v; std::memcpy(&v, p, 2); return v; }
    case Code(ElementType::kI32): { int32_t v; std::memcpy(&v, p, 4); return v; }
    case Code(ElementType::kI64): { int64_t v; std::memcpy(&v, p, 8); return v; }
  }
  return static_cast<int64_t>(ElementAsDouble(t, i));
}

StatusOr<HostValue> ParseValue(std::string_view spec_in) {
  std::string_view spec = Trim(spec_in);
  HostValue value;
  if (!spec.empty() && spec.front() == '@') {
    HEXIR_ASSIGN_OR_RETURN(value.tensor, ReadNpy(std::string(spec.substr(1))));
    return value;
  }
  size_t eq = spec.find('=');
  if (eq == std::string_view::npos) {
    return InvalidArgument("input '", spec, "': expected TYPE=VALUES (e.g. 2x3xf32=1 2 3 4 5 6, f32=0.5) or @file.npy");
  }
  std::vector<int64_t> dims;
  int32_t type = 0;
  Status st = ParseType(Trim(spec.substr(0, eq)), &dims, &type);
  if (!st.ok()) return std::move(st).WithContext(StrCat("input '", spec, "'"));

  std::vector<std::string_view> tokens;
  std::string_view rest = spec.substr(eq + 1);
  while (true) {
    rest = Trim(rest);
    if (rest.empty()) break;
    size_t sp = 0;
    while (sp < rest.size() && !std::isspace(static_cast<unsigned char>(rest[sp])) && rest[sp] != ',') ++sp;
    tokens.push_back(rest.substr(0, sp));
    rest.remove_prefix(sp);
    if (!rest.empty() && rest.front() == ',') rest.remove_prefix(1);
  }

  if (dims.empty()) {  // scalar
    if (tokens.size() != 1) {
      return InvalidArgument("input '", spec, "': a scalar takes exactly one value, got ", tokens.size());
    }
    double f = 0;
    int64_t i = 0;
    st = ParseNumber(tokens[0], type, &f, &i);
    if (!st.ok()) return std::move(st).WithContext(StrCat("input '", spec, "'"));
    value.scalar_type = type;
    if (IsFloatType(type)) {
      value.kind = HostValue::Kind::kFloat;
      value.f = f;
    } else {
      if (!FitsIntType(i, type)) return InvalidArgument("input '", spec, "': ", i, " does not fit in ", ElementTypeName(type));
      value.kind = HostValue::Kind::kInt;
      value.i = i;
    }
    return value;
  }

  HostTensor& t = value.tensor;
  t.element_type = type;
  t.dims = dims;
  int64_t count = 1;
  for (int64_t d : dims) {
    if (d != 0 && count > (int64_t{1} << 40) / d) return InvalidArgument("input '", spec, "': tensor is too large");
    count *= d;
  }
  if (tokens.size() != 1 && static_cast<int64_t>(tokens.size()) != count) {
    return InvalidArgument("input '", Trim(spec.substr(0, eq)), "': expected ", count,
                           " values (or one to fill the tensor), got ", tokens.size());
  }
  std::string type_text(Trim(spec.substr(0, eq)));
  HEXIR_RETURN_IF_ERROR(CheckHostAllocation(StrCat("input '", type_text, "'"),
                                            static_cast<uint64_t>(count) * ElementTypeByteSize(type)));
  t.bytes.assign(static_cast<size_t>(count * ElementTypeByteSize(type)), 0);
  double f = 0;
  int64_t i = 0;
  for (int64_t k = 0; k < count; ++k) {
    if (k == 0 || tokens.size() != 1) {  // a single token is parsed once and fills the tensor
      std::string_view tok = tokens[tokens.size() == 1 ? 0 : static_cast<size_t>(k)];
      st = ParseNumber(tok, type, &f, &i);
      if (!st.ok()) return std::move(st).WithContext(StrCat("input '", type_text, "' value ", k));
      if (!IsFloatType(type) && !FitsIntType(i, type)) {
        return InvalidArgument("input '", type_text, "' value ", k, ": ", i, " does not fit in ", ElementTypeName(type));
      }
    }
    StoreElement(t, k, f, i);
  }
  return value;
}

std::string DescribeType(const HostValue& value) {
  if (value.kind != HostValue::Kind::kTensor) return std::string(ElementTypeName(value.scalar_type));
  std::string s;
  for (int64_t d : value.tensor.dims) s += std::to_string(d) + "x";
  return s + std::string(ElementTypeName(value.tensor.element_type));
}

std::string FormatValue(const HostValue& value) {
  std::string s = DescribeType(value) + "=";
  if (value.kind == HostValue::Kind::kInt) return s + std::to_string(value.i);
  if (value.kind == HostValue::Kind::kFloat) return s + FormatFloat(value.f, value.scalar_type);
  const HostTensor& t = value.tensor;
  int64_t n = t.element_count();
  for (int64_t k = 0; k < n; ++k) {
    if (k) s += ' ';
    if (IsFloatType(t.element_type)) {
      s += FormatFloat(ElementAsDouble(t, k), t.element_type);
    } else {
      s += std::to_string(ElementAsInt(t, k));
    }
  }
  return s;
}

// ---- .npy (format versions 1.0 / 2.0 / 3.0, C order, little-endian) -------------------

namespace {

const char* NpyDescr(int32_t type) {
  switch (type) {
    case Code(ElementType::kF32): return "<f4";
    case Code(ElementType::kF16): return "<f2";
    case Code(ElementType::kF64): return "<f8";
    case Code(ElementType::kI8): return "|i1";
    case Code(ElementType::kI16): return "<i2";
    case Code(ElementType::kI32): return "<i4";
    case Code(ElementType::kI64): return "<i8";
    case Code(ElementType::kI1): return "|b1";
    // NumPy has no bf16: ml_dtypes' bfloat16 saves as 2-byte void, np.load(f).view(bfloat16).
    case Code(ElementType::kBF16): return "<V2";
    default: return nullptr;
  }
}

int32_t NpyType(std::string_view d) {
  if (d == "<f4") return Code(ElementType::kF32);
  if (d == "<f2") return Code(ElementType::kF16);
  if (d == "<f8") return Code(ElementType::kF64);
  if (d == "|i1" || d == "<i1") return Code(ElementType::kI8);
  if (d == "<i2") return Code(ElementType::kI16);
  if (d == "<i4") return Code(ElementType::kI32);
  if (d == "<i8") return Code(ElementType::kI64);
  if (d == "|b1") return Code(ElementType::kI1);
  if (d == "<V2" || d == "|V2") return Code(ElementType::kBF16);
  return 0;
}

// Value of `key` in the header dict, e.g. 'descr': '<f4' -> "<f4".
std::string_view DictValue(std::string_view header, std::string_view key) {
  std::string quoted = "'" + std::string(key) + "'";
  size_t k = header.find(quoted);
  if (k == std::string_view::npos) return {};
  size_t colon = header.find(':', k + quoted.size());
  if (colon == std::string_view::npos) return {};
  std::string_view v = Trim(header.substr(colon + 1));
  if (!v.empty() && (v.front() == '\'' || v.front() == '"')) {
    size_t end = v.find(v.front(), 1);
    return end == std::string_view::npos ? std::string_view() : v.substr(1, end - 1);
  }
  if (!v.empty() && v.front() == '(') {
    size_t end = v.find(')');
    return end == std::string_view::npos ? std::string_view() : v.substr(0, end + 1);
  }
  size_t end = v.find_first_of(",}");
  return Trim(v.substr(0, end));
}

}  // namespace

StatusOr<HostTensor> ReadNpy(const std::string& path) {
  HEXIR_ASSIGN_OR_RETURN(std::string data, ReadWholeFile(path));
  if (data.size() < 10 || data.compare(0, 6, "\x93NUMPY") != 0) {
    return InvalidArgument("'", path, "' is not a .npy file (bad magic)");
  }
  uint8_t major = static_cast<uint8_t>(data[6]);
  size_t header_len = 0, header_start = 0;
  if (major == 1) {
    header_len = static_cast<uint8_t>(data[8]) | (static_cast<uint8_t>(data[9]) << 8);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (data.size() < 12) return DataLoss("'", path, "': truncated .npy header");
    header_len = 0;
    for (int b = 0; b < 4; ++b) header_len |= static_cast<size_t>(static_cast<uint8_t>(data[8 + b])) << (8 * b);
    header_start = 12;
  } else {
    return InvalidArgument("'", path, "': unsupported .npy version ", int(major));
  }
  if (header_len > data.size() - header_start) return DataLoss("'", path, "': truncated .npy header");
  std::string_view header(data.data() + header_start, header_len);
  std::string_view descr = DictValue(header, "descr");
  std::string_view order = DictValue(header, "fortran_order");
  std::string_view shape = DictValue(header, "shape");
  HostTensor t;
  t.element_type = NpyType(descr);
  if (t.element_type == 0) return InvalidArgument("'", path, "': unsupported dtype '", descr, "'");
  if (order != "False") return InvalidArgument("'", path, "': Fortran-order arrays are not supported");
  if (shape.size() < 2 || shape.front() != '(') return InvalidArgument("'", path, "': bad shape in header");
  std::string_view dims = shape.substr(1, shape.size() - 2);
  int64_t count = 1;
  while (!Trim(dims).empty()) {
    dims = Trim(dims);
    size_t comma = dims.find(',');
    std::string_view tok = Trim(dims.substr(0, comma));
    int64_t d = 0;
    auto [p, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), d);
    if (ec != std::errc() || p != tok.data() + tok.size() || d < 0 || (d && count > (int64_t{1} << 40) / d)) {
      return InvalidArgument("'", path, "': bad dimension '", tok, "'");
    }
    t.dims.push_back(d);
    count *= d;
    if (comma == std::string_view::npos) break;
    dims.remove_prefix(comma + 1);
  }
  size_t payload = header_start + header_len;
  size_t want = static_cast<size_t>(count * ElementTypeByteSize(t.element_type));
  if (data.size() - payload != want) {
    return DataLoss("'", path, "': expected ", want, " data bytes for shape ", shape, ", found ", data.size() - payload);
  }
  t.bytes.assign(data.begin() + static_cast<std::ptrdiff_t>(payload), data.end());
  return t;
}

Status WriteNpy(const std::string& path, const HostTensor& t) {
  const char* descr = NpyDescr(t.element_type);
  if (!descr) return Unimplemented("cannot save ", ElementTypeName(t.element_type), " to .npy (no NumPy dtype)");
  std::string shape = "(";
  for (size_t i = 0; i < t.dims.size(); ++i) shape += std::to_string(t.dims[i]) + (t.dims.size() == 1 ? "," : i + 1 < t.dims.size() ? ", " : "");
  shape += ")";
  std::string header = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return NotFound("cannot write '", path, "': ", std::strerror(errno));
  out.write("\x93NUMPY\x01\x00", 8);
  char len[2] = {static_cast<char>(header.size() & 0xff), static_cast<char>(header.size() >> 8)};
  out.write(len, 2);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(reinterpret_cast<const char*>(t.bytes.data()), static_cast<std::streamsize>(t.bytes.size()));
  out.close();
  if (!out) return DataLoss("failed writing '", path, "'");
  return Status::Ok();
}

}  // namespace hexir::tools
