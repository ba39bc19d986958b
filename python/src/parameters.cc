#include "python/src/parameters.h"

#include <pybind11/stl.h>

#include <map>
#include <mutex>
#include <utility>

#include "python/src/errors.h"
#include "python/src/fast_path.h"
#include "tools/common/llama_parameters.h"
#include "tools/common/parameter_file.h"

namespace py = pybind11;

namespace hexir::python {

class Parameters {
 public:
  explicit Parameters(std::unique_ptr<tools::LlamaParameters> file) : llama_(std::move(file)) {}
  explicit Parameters(std::unique_ptr<tools::ParameterFile> file) : onnx_(std::move(file)) {}
  const std::string& path() const { return llama_ ? llama_->path() : onnx_->path(); }
  const tools::LlamaParameters* llama() const { return llama_.get(); }
  const tools::ParameterFile* onnx() const { return onnx_.get(); }

  StatusOr<std::vector<vm::Ref<hal::BufferView>>> Views(hal::Device& device,
                                                        const std::vector<tools::AbiType>& args,
                                                        size_t first, const std::string& function) {
    int32_t type = 0;  // a parameter file's tensors keep their types: one upload per device
    if (llama_) {
      HEXIR_ASSIGN_OR_RETURN(type, llama_->CheckArguments(args, first, function));
    } else {
      HEXIR_RETURN_IF_ERROR(onnx_->CheckArguments(args, function));
      if (first != onnx_->first_argument())
        return InvalidArgument(function, ": the parameters of '", onnx_->path(), "' follow ",
                               onnx_->first_argument(), " inputs, got ", first);
    }
    std::lock_guard<std::mutex> lock(mu_);
    auto key = std::make_pair(&device, type);
    auto it = uploaded_.find(key);
    if (it != uploaded_.end()) return it->second.views;
    std::vector<vm::Ref<hal::BufferView>> views;
    if (llama_) {
      HEXIR_ASSIGN_OR_RETURN(views, llama_->Upload(device, type));
    } else {
      HEXIR_ASSIGN_OR_RETURN(views, onnx_->Upload(device, args));
    }
    uploaded_[key] = Uploaded{vm::Ref<hal::Device>::Retain(&device), views};
    return views;
  }
  size_t size() const { return llama_ ? llama_->weights().size() : onnx_->tensors().size(); }
  size_t uploads() {
    std::lock_guard<std::mutex> lock(mu_);
    return uploaded_.size();
  }

 private:
  struct Uploaded {
    vm::Ref<hal::Device> device;  // keeps the key's device alive
    std::vector<vm::Ref<hal::BufferView>> views;
  };
  std::unique_ptr<tools::LlamaParameters> llama_;
  std::unique_ptr<tools::ParameterFile> onnx_;  // exactly one of the two is set
  std::mutex mu_;
  std::map<std::pair<hal::Device*, int32_t>, Uploaded> uploaded_;
};

namespace {
// Set once by BindParametersType.
const py::detail::type_info* parameters_type = nullptr;
}  // namespace

Parameters* AsParameters(py::handle object) { return InstanceOf<Parameters>(object, parameters_type); }

std::vector<vm::Ref<hal::BufferView>> BindParameters(Parameters& parameters, hal::Device& device,
                                                     const std::vector<tools::AbiType>& args,
                                                     size_t first, const std::string& function) {
  auto views = [&] {
    py::gil_scoped_release unlocked;  // the first call uploads every weight
    return parameters.Views(device, args, first, function);
  }();
  return ValueOrRaise(std::move(views));
}

void BindParametersType(py::module_& m) {
  py::class_<Parameters>(m, "Parameters", py::is_final(),
                         "The weights of a llama2.c (.bin) or GGUF (.gguf) checkpoint, or an ONNX "
                         "model's parameter file (import_model(..., parameters=PATH)), mapped once "
                         "and uploaded once per device; pass it as the last argument of a call "
                         "(module.generate(prompt, max_tokens, parameters), module.main(x, parameters)).")
      .def(py::init([](py::object path) {
             std::string p = py::str(py::module_::import("os").attr("fspath")(path));
             if (tools::ParameterFile::IsParameterFile(p)) {  // reads its first 80 bytes
               auto file = [&] {
                 py::gil_scoped_release unlocked;
                 return tools::ParameterFile::Open(p);
               }();
               return std::make_unique<Parameters>(ValueOrRaise(std::move(file)));
             }
             auto file = [&] {
               py::gil_scoped_release unlocked;
               return tools::LlamaParameters::Open(p);
             }();
             return std::make_unique<Parameters>(ValueOrRaise(std::move(file)));
           }),
           py::arg("path"))
      .def_property_readonly("path", [](Parameters& p) { return p.path(); })
      .def_property_readonly("names", [](Parameters& p) {
        std::vector<std::string> names;
        if (p.llama())
          for (const auto& w : p.llama()->weights()) names.push_back(w.name);
        else
          for (const auto& t : p.onnx()->tensors()) names.push_back(t.name);
        return names;
      })
      .def_property_readonly("config", [](Parameters& p) -> py::object {
        if (!p.llama()) return py::none();  // an ONNX parameter file has no model config
        const auto& c = p.llama()->config();
        py::dict d;
        d["dim"] = c.dim;
        d["hidden_dim"] = c.hidden_dim;
        d["n_layers"] = c.n_layers;
        d["n_heads"] = c.n_heads;
        d["n_kv_heads"] = c.n_kv_heads;
        d["vocab_size"] = c.vocab_size;
        d["seq_len"] = c.seq_len;
        return d;
      })
      .def_property_readonly("uploads", &Parameters::uploads,
                             "How many (device, element type) uploads were made so far.")
      .def("__len__", &Parameters::size)
      .def("__repr__", [](Parameters& p) {
        return StrCat("hexir.Parameters('", p.path(), "', ", p.size(), " tensors)");
      });
  parameters_type = RegisteredType<Parameters>();
}

}  // namespace hexir::python
