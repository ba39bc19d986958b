#include "tools/common/parameter_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "compiler/importers/llama/Gguf.h"
#include "compiler/importers/onnx/ParameterFileKeys.h"
#include "hal/element_type.h"

namespace hexir::tools {

namespace llama = compiler::llama;
using importers::onnx::kParameterFileArchitecture;
using importers::onnx::kParameterFileEntryKey;
using importers::onnx::kParameterFileFirstArgumentKey;

namespace {

// The static element count of an argument type; -1 when a dim is dynamic.
int64_t StaticElements(const AbiType& t) {
  int64_t n = 1;
  for (int64_t d : t.dims) {
    if (d < 0) return -1;
    n *= d;
  }
  return n;
}

}  // namespace

bool ParameterFile::IsParameterFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return false;
  // "GGUF", u32 version, u64 tensors, u64 keys, then the first key: general.architecture.
  uint8_t head[4 + 4 + 8 + 8 + 8 + 20 + 4 + 8 + 16] = {};
  ssize_t n = ::read(fd, head, sizeof(head));
  ::close(fd);
  if (n != static_cast<ssize_t>(sizeof(head)) || !llama::IsGguf(head, sizeof(head))) return false;
  return std::memcmp(head + 32, "general.architecture", 20) == 0 &&
         std::memcmp(head + 32 + 20 + 4 + 8, kParameterFileArchitecture, 16) == 0;
}

StatusOr<std::unique_ptr<ParameterFile>> ParameterFile::Open(const std::string& path) {
  std::unique_ptr<ParameterFile> p(new ParameterFile());
  p->path_ = path;
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return NotFound("cannot open parameter file '", path, "': ", std::strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return InvalidArgument("parameter file '", path, "' is not a regular file (a directory or a device?)");
  }
  if (st.st_size == 0) {
    ::close(fd);
    return InvalidArgument("parameter file '", path, "' is empty");
  }
  p->size_ = static_cast<size_t>(st.st_size);
  void* m = mmap(nullptr, p->size_, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (m == MAP_FAILED) return Internal("cannot mmap '", path, "': ", std::strerror(errno));
  p->data_ = static_cast<uint8_t*>(m);
  if (!llama::IsGguf(p->data_, p->size_))
    return InvalidArgument("parameter file '", path, "' is not a GGUF file (hexir-import --parameters writes one)");
  auto parsed = llama::ParseGguf(p->data_, p->size_);
  if (!parsed.ok()) return std::move(parsed).status().WithContext(StrCat("parameter file '", path, "'"));
  const llama::GgufFile& gguf = *parsed;
  const llama::GgufValue* arch = gguf.Find("general.architecture");
  const llama::GgufValue* entry = gguf.Find(kParameterFileEntryKey);
  const llama::GgufValue* first = gguf.Find(kParameterFileFirstArgumentKey);
  if (!arch || arch->s != kParameterFileArchitecture || !entry || !first || !first->is_integer())
    return InvalidArgument("parameter file '", path, "' is not a hexir-import parameter file "
                           "(general.architecture '", arch ? arch->s : std::string(),
                           "'; a llama checkpoint goes to hexir-generate)");
  p->entry_ = entry->s;
  p->first_argument_ = static_cast<size_t>(first->u ? first->u : static_cast<uint64_t>(first->i));
  for (const llama::GgufTensorInfo& info : gguf.tensors) {
    Tensor t;
    t.name = info.name;
    t.element_type = hal::ElementTypeFromName(llama::GgmlTypeName(info.type));
    if (t.element_type == 0 || info.byte_size < 0)
      return InvalidArgument("parameter file '", path, "': tensor '", info.name, "' has type ",
                             llama::GgmlTypeName(info.type), ", not a plain element type");
    t.elements = static_cast<int64_t>(info.elements());
    t.data = p->data_ + info.file_offset;
    t.byte_size = static_cast<size_t>(info.byte_size);
    p->tensors_.push_back(std::move(t));
  }
  return p;
}

ParameterFile::~ParameterFile() {
  if (data_) munmap(data_, size_);
}

StatusOr<std::vector<AbiType>> ParameterFile::CheckFunction(const vm::Function& fn) const {
  HEXIR_ASSIGN_OR_RETURN(std::vector<AbiType> args, ParseAbiTypes(std::string(fn.attr("abi.args"))));
  HEXIR_RETURN_IF_ERROR(CheckArguments(args, StrCat("function '", fn.name, "'")));
  return args;
}

Status ParameterFile::CheckArguments(const std::vector<AbiType>& args,
                                     const std::string& function) const {
  const std::string where = StrCat("parameter file '", path_, "' (for @", entry_, ") and ", function);
  if (first_argument_ + tensors_.size() != args.size())
    return InvalidArgument(where, ": the file holds ", tensors_.size(), " tensors for arguments ",
                           first_argument_, ".., the function takes ", args.size(), " arguments");
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const Tensor& t = tensors_[i];
    const AbiType& a = args[first_argument_ + i];
    if (!a.is_tensor || a.element_type != t.element_type || StaticElements(a) != t.elements)
      return InvalidArgument(where, ": argument ", first_argument_ + i, " is ", a.text,
                             ", the file's tensor '", t.name, "' is ", t.elements, " x ",
                             hal::ElementTypeName(t.element_type));
  }
  return Status::Ok();
}

StatusOr<std::vector<vm::Ref<hal::BufferView>>> ParameterFile::Upload(
    hal::Device& device, const std::vector<AbiType>& args) const {
  return Upload(std::vector<hal::Device*>(args.size(), &device), args);
}

StatusOr<std::vector<vm::Ref<hal::BufferView>>> ParameterFile::Upload(
    const std::vector<hal::Device*>& argument_devices, const std::vector<AbiType>& args) const {
  std::vector<vm::Ref<hal::BufferView>> views;
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const Tensor& t = tensors_[i];
    const size_t argument = first_argument_ + i;
    if (argument >= argument_devices.size() || argument_devices[argument] == nullptr)
      return InvalidArgument("uploading parameter '", t.name, "' of '", path_, "': argument ",
                             argument, " has no device");
    const std::vector<int64_t>& dims = args[argument].dims;
    auto view = hal::BufferViewFromHost(*argument_devices[argument], t.element_type,
                                        Span<const int64_t>(dims.data(), dims.size()), t.data,
                                        t.byte_size);
    if (!view.ok())
      return std::move(view).status().WithContext(StrCat("uploading parameter '", t.name, "' of '", path_, "'"));
    views.push_back(std::move(*view));
  }
  return views;
}

}  // namespace hexir::tools
