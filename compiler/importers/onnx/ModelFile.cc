#include "compiler/importers/onnx/ModelFile.h"

#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <optional>
#include <vector>

namespace hexir::importers::onnx {
namespace {

constexpr uint32_t kModelGraph = 7, kGraphInitializer = 5, kTensorRawData = 9;
constexpr uint32_t kLengthDelimited = 2;

// One raw_data payload left in the file: the k-th initializer's bytes [offset, offset + length).
struct InPlace {
  int initializer = 0;
  int64_t offset = 0, length = 0;
};

// Copies the wire bytes of a file's ModelProto without the large raw_data payloads.
class Stripper {
 public:
  Stripper(int fd, int64_t size, int64_t in_place_bytes) : fd_(fd), size_(size), min_(in_place_bytes) {}

  // The ModelProto's bytes without the payloads; nullopt on anything unexpected.
  std::optional<std::string> Model() {
    std::string out;
    int graphs = 0;
    bool ok = Message(0, size_, &out, [&](uint32_t field, int64_t begin, int64_t end, std::string* to) {
      if (field != kModelGraph) return CopyDelimited(field, begin, end, to) ? 1 : -1;
      if (++graphs > 1) return -1;  // protobuf would merge two graphs: leave that to it
      std::string graph;
      if (!Message(begin, end, &graph, [&](uint32_t f, int64_t b, int64_t e, std::string* g) {
            if (f != kGraphInitializer) return CopyDelimited(f, b, e, g) ? 1 : -1;
            return Tensor(b, e, g) ? 1 : -1;
          }))
        return -1;
      Delimited(field, graph, to);
      return 1;
    });
    if (!ok) return std::nullopt;
    return out;
  }

  const std::vector<InPlace>& in_place() const { return in_place_; }

 private:
  int fd_;
  int64_t size_, min_;
  int initializers_ = 0;
  std::vector<InPlace> in_place_;

  bool Read(int64_t at, int64_t n, char* to) const {
    while (n > 0) {
      ssize_t got = ::pread(fd_, to, static_cast<size_t>(n), at);
      if (got <= 0) return false;
      at += got;
      to += got;
      n -= got;
    }
    return true;
  }
  bool Copy(int64_t begin, int64_t end, std::string* to) const {
    size_t old = to->size();
    to->resize(old + static_cast<size_t>(end - begin));
    return Read(begin, end - begin, to->data() + old);
  }
  // A varint at *at (below end): its value, *at moved past it.
  bool Varint(int64_t* at, int64_t end, uint64_t* value) const {
    char bytes[10];
    int64_t n = std::min<int64_t>(10, end - *at);
    if (n <= 0 || !Read(*at, n, bytes)) return false;
    *value = 0;
    for (int i = 0; i < n; ++i) {
      *value |= static_cast<uint64_t>(bytes[i] & 0x7f) << (7 * i);
      if ((bytes[i] & 0x80) == 0) {
        *at += i + 1;
        return true;
      }
    }
    return false;
  }
  static void PutVarint(uint64_t v, std::string* to) {
    for (; v >= 0x80; v >>= 7) to->push_back(static_cast<char>((v & 0x7f) | 0x80));
    to->push_back(static_cast<char>(v));
  }
  static void Delimited(uint32_t field, const std::string& body, std::string* to) {
    PutVarint((static_cast<uint64_t>(field) << 3) | kLengthDelimited, to);
    PutVarint(body.size(), to);
    to->append(body);
  }

  // Walks the fields of the message in [begin, end). Each field's bytes (tag included) are
  // copied to `out`, except length-delimited ones, which go to `inner(field, payload begin,
  // payload end, out)`: 1 when it handled the field, -1 on failure.
  template <typename Inner>
  bool Message(int64_t begin, int64_t end, std::string* out, Inner inner) {
    for (int64_t at = begin; at < end;) {
      const int64_t field_begin = at;
      uint64_t tag = 0, length = 0;
      if (!Varint(&at, end, &tag)) return false;
      switch (tag & 7) {
        case 0:
          if (!Varint(&at, end, &length)) return false;
          break;
        case 1: at += 8; break;
        case 5: at += 4; break;
        case kLengthDelimited: {
          if (!Varint(&at, end, &length) || length > static_cast<uint64_t>(end - at)) return false;
          const int64_t payload = at;
          at += static_cast<int64_t>(length);
          if (inner(static_cast<uint32_t>(tag >> 3), payload, at, out) < 0) return false;
          continue;
        }
        default: return false;  // groups (3, 4) and invalid wire types
      }
      if (at > end || !Copy(field_begin, at, out)) return false;
    }
    return true;
  }

  // An initializer: its fields re-emitted without a large raw_data payload.
  bool Tensor(int64_t begin, int64_t end, std::string* graph) {
    const int index = initializers_++;
    std::string tensor;
    int raw = 0;
    if (!Message(begin, end, &tensor, [&](uint32_t f, int64_t b, int64_t e, std::string* t) {
          if (f == kTensorRawData && ++raw > 1) return -1;
          if (f == kTensorRawData && e - b >= min_) {
            in_place_.push_back({index, b, e - b});
            return 1;
          }
          return CopyDelimited(f, b, e, t) ? 1 : -1;
        }))
      return false;
    Delimited(kGraphInitializer, tensor, graph);
    return true;
  }
  // A length-delimited field copied as it is.
  bool CopyDelimited(uint32_t field, int64_t begin, int64_t end, std::string* to) const {
    PutVarint((static_cast<uint64_t>(field) << 3) | kLengthDelimited, to);
    PutVarint(static_cast<uint64_t>(end - begin), to);
    return Copy(begin, end, to);
  }
};

Status ParseWhole(const std::string& path, ::onnx::ModelProto* model) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status(StatusCode::kNotFound, "cannot open '" + path + "'");
  if (!model->ParseFromIstream(&in))
    return Status(StatusCode::kInvalidArgument, "'" + path + "' is not an ONNX model (protobuf parse failed)");
  return Status::Ok();
}

}  // namespace

Status ReadModelFile(const std::string& path, const std::string& location, int64_t in_place_bytes,
                     ::onnx::ModelProto* model) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status(StatusCode::kNotFound, "cannot open '" + path + "'");
  const off_t size = ::lseek(fd, 0, SEEK_END);
  Stripper stripper(fd, size, in_place_bytes);
  std::optional<std::string> wire = size > 0 ? stripper.Model() : std::nullopt;
  ::close(fd);
  if (!wire || stripper.in_place().empty()) return ParseWhole(path, model);
  bool ok = model->ParseFromString(*wire);
  auto* inits = model->mutable_graph()->mutable_initializer();
  for (const InPlace& p : stripper.in_place()) {
    if (!ok || p.initializer >= inits->size()) {
      ok = false;
      break;
    }
    ::onnx::TensorProto* t = inits->Mutable(p.initializer);
    ok = t->data_location() != ::onnx::TensorProto::EXTERNAL && t->external_data_size() == 0;
    t->set_data_location(::onnx::TensorProto::EXTERNAL);
    for (auto [key, value] : {std::pair<const char*, std::string>{"location", location},
                              {"offset", std::to_string(p.offset)},
                              {"length", std::to_string(p.length)}}) {
      auto* kv = t->add_external_data();
      kv->set_key(key);
      kv->set_value(value);
    }
  }
  if (ok) return Status::Ok();
  model->Clear();
  return ParseWhole(path, model);
}

}  // namespace hexir::importers::onnx
