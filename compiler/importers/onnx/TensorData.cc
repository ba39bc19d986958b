#include "compiler/importers/onnx/TensorData.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "compiler/importers/onnx/Builder.h"

namespace hexir::importers::onnx {
namespace {

bool IsExternal(const ::onnx::TensorProto& t) {
  return t.data_location() == ::onnx::TensorProto::EXTERNAL;
}

// Where an external tensor's bytes are: checked to exist and to be long enough.
struct ExternalRange {
  std::string location;  // as written in the model
  std::string path;      // resolved against the model's folder
  int64_t offset = 0;
  int64_t length = 0;
};

bool ParseCount(const std::string& text, int64_t* out) {
  if (text.empty() || text.size() > 18 || text.find_first_not_of("0123456789") != std::string::npos)
    return false;
  *out = std::stoll(text);
  return true;
}

StatusOr<ExternalRange> ResolveExternal(const ::onnx::TensorProto& t, int64_t bytes,
                                        const std::string& model_dir) {
  ExternalRange r;
  r.length = -1;
  const std::string what = "tensor '" + t.name() + "': external data";
  for (const auto& kv : t.external_data()) {
    if (kv.key() == "location") {
      r.location = kv.value();
    } else if (kv.key() == "offset" || kv.key() == "length") {
      int64_t* field = kv.key() == "offset" ? &r.offset : &r.length;
      if (!ParseCount(kv.value(), field))
        return InvalidArgument(what, " key '", kv.key(), "' is '", kv.value(), "', not a byte count");
    }
  }
  if (r.location.empty()) return InvalidArgument(what, " has no 'location'");
  if (r.location[0] == '/' || r.location == ".." || r.location.rfind("../", 0) == 0 ||
      r.location.find("/../") != std::string::npos ||
      (r.location.size() >= 3 && r.location.compare(r.location.size() - 3, 3, "/..") == 0))
    return InvalidArgument(what, " location '", r.location, "' is not a path inside the model's folder");
  if (r.length < 0) r.length = bytes;
  if (r.length != bytes)
    return InvalidArgument(what, " length is ", r.length, " bytes, the tensor's dims need ", bytes);
  r.path = (model_dir.empty() ? std::string(".") : model_dir) + "/" + r.location;
  struct stat st;
  if (::stat(r.path.c_str(), &st) != 0)
    return NotFound(what, " file '", r.location, "' (", r.path, "): ", std::strerror(errno));
  if (r.offset > st.st_size || r.length > st.st_size - r.offset)
    return DataLoss(what, " file '", r.location, "' has ", static_cast<int64_t>(st.st_size),
                    " bytes, the tensor needs bytes [", r.offset, ", ", r.offset + r.length, ")");
  return r;
}

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

// Copies r's bytes to `sink(data, n)` in chunks.
template <typename Sink>
Status CopyExternal(const ::onnx::TensorProto& t, const ExternalRange& r, Sink sink) {
  std::unique_ptr<std::FILE, FileCloser> f(std::fopen(r.path.c_str(), "rb"));
  if (!f || std::fseek(f.get(), static_cast<long>(r.offset), SEEK_SET) != 0)
    return NotFound("tensor '", t.name(), "': cannot read external data file '", r.location,
                    "': ", std::strerror(errno));
  std::string chunk(1 << 20, '\0');
  for (int64_t left = r.length; left > 0;) {
    size_t want = static_cast<size_t>(std::min<int64_t>(left, static_cast<int64_t>(chunk.size())));
    size_t got = std::fread(chunk.data(), 1, want, f.get());
    if (got != want)
      return DataLoss("tensor '", t.name(), "': external data file '", r.location,
                      "' ended early (", r.length - left + static_cast<int64_t>(got), " of ",
                      r.length, " bytes read)");
    HEXIR_RETURN_IF_ERROR(sink(chunk.data(), got));
    left -= static_cast<int64_t>(got);
  }
  return Status::Ok();
}

// The typed fields (float_data, ...) as little-endian bytes of `et`.
StatusOr<std::string> TypedFieldBytes(const ::onnx::TensorProto& t, const std::string& et, int64_t n) {
  const int eb = ElementBytes(et);
  std::string raw(static_cast<size_t>(n * eb), '\0');
  char* p = raw.data();
  auto put = [&](int64_t i, const void* src) { std::memcpy(p + i * eb, src, eb); };
  if (et == "f32" && t.float_data_size() == n) {
    for (int64_t i = 0; i < n; ++i) { float f = t.float_data(i); put(i, &f); }
  } else if (et == "f64" && t.double_data_size() == n) {
    for (int64_t i = 0; i < n; ++i) { double d = t.double_data(i); put(i, &d); }
  } else if (et == "i64" && t.int64_data_size() == n) {
    for (int64_t i = 0; i < n; ++i) { int64_t x = t.int64_data(i); put(i, &x); }
  } else if (t.uint64_data_size() == n) {  // uint32, uint64
    for (int64_t i = 0; i < n; ++i) { uint64_t x = t.uint64_data(i); put(i, &x); }
  } else if (t.int32_data_size() == n) {  // i32 i16 i8 bool f16 bf16
    for (int64_t i = 0; i < n; ++i) {
      int32_t x = t.int32_data(i);
      put(i, &x);  // little-endian: the low bytes
    }
  } else {
    return InvalidArgument("tensor '", t.name(), "': data does not match its ", n, " elements");
  }
  return raw;
}

}  // namespace

int64_t TensorByteSize(const ::onnx::TensorProto& t, const std::string& et) {
  int64_t n = ElementBytes(et);
  for (int64_t d : t.dims()) {
    if (d < 0 || (d > 0 && n > INT64_MAX / d)) return -1;
    n *= d;
  }
  return n;
}

StatusOr<std::string> ReadTensorBytes(const ::onnx::TensorProto& t, const std::string& et,
                                      const std::string& model_dir) {
  const int64_t bytes = TensorByteSize(t, et);
  if (bytes < 0) return InvalidArgument("tensor '", t.name(), "': dims are negative or too large");
  std::string raw;
  if (IsExternal(t)) {
    HEXIR_ASSIGN_OR_RETURN(ExternalRange r, ResolveExternal(t, bytes, model_dir));
    raw.reserve(static_cast<size_t>(bytes));
    HEXIR_RETURN_IF_ERROR(CopyExternal(t, r, [&](const char* data, size_t n) {
      raw.append(data, n);
      return Status::Ok();
    }));
  } else if (t.has_raw_data()) {
    raw = t.raw_data();
  } else {
    HEXIR_ASSIGN_OR_RETURN(raw, TypedFieldBytes(t, et, bytes / ElementBytes(et)));
  }
  if (static_cast<int64_t>(raw.size()) != bytes)
    return InvalidArgument("tensor '", t.name(), "': raw data has ", raw.size(), " bytes, expected ", bytes);
  return raw;
}

Status WriteTensorBytes(const ::onnx::TensorProto& t, const std::string& et,
                        const std::string& model_dir, std::FILE* to, const std::string& to_name) {
  auto write = [&](const char* data, size_t n) -> Status {
    if (std::fwrite(data, 1, n, to) != n)
      return DataLoss("cannot write '", to_name, "' (tensor '", t.name(), "'): ", std::strerror(errno));
    return Status::Ok();
  };
  const int64_t bytes = TensorByteSize(t, et);
  if (bytes < 0) return InvalidArgument("tensor '", t.name(), "': dims are negative or too large");
  if (IsExternal(t)) {
    HEXIR_ASSIGN_OR_RETURN(ExternalRange r, ResolveExternal(t, bytes, model_dir));
    return CopyExternal(t, r, write);
  }
  if (t.has_raw_data()) {
    if (static_cast<int64_t>(t.raw_data().size()) != bytes)
      return InvalidArgument("tensor '", t.name(), "': raw data has ", t.raw_data().size(),
                             " bytes, expected ", bytes);
    return write(t.raw_data().data(), t.raw_data().size());
  }
  HEXIR_ASSIGN_OR_RETURN(std::string raw, TypedFieldBytes(t, et, bytes / ElementBytes(et)));
  return write(raw.data(), raw.size());
}

}  // namespace hexir::importers::onnx
