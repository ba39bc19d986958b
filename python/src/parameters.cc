#include "python/src/parameters.h"

#include <pybind11/stl.h>

#include <map>
#include <mutex>
#include <utility>

#include "python/src/errors.h"
#include "tools/common/llama_parameters.h"

namespace py = pybind11;

namespace hexir::python {

class Parameters {
 public:
  explicit Parameters(std::unique_ptr<tools::LlamaParameters> file) : file_(std::move(file)) {}
  const tools::LlamaParameters& file() const { return *file_; }

  StatusOr<std::vector<vm::Ref<hal::BufferView>>> Views(hal::Device& device,
                                                        const std::vector<tools::AbiType>& args,
                                                        size_t first, const std::string& function) {
    HEXIR_ASSIGN_OR_RETURN(int32_t type, file_->CheckArguments(args, first, function));
    std::lock_guard<std::mutex> lock(mu_);
    auto key = std::make_pair(&device, type);
    auto it = uploaded_.find(key);
    if (it != uploaded_.end()) return it->second.views;
    HEXIR_ASSIGN_OR_RETURN(auto views, file_->Upload(device, type));
    uploaded_[key] = Uploaded{vm::Ref<hal::Device>::Retain(&device), views};
    return views;
  }
  size_t uploads() {
    std::lock_guard<std::mutex> lock(mu_);
    return uploaded_.size();
  }

 private:
  struct Uploaded {
    vm::Ref<hal::Device> device;  // keeps the key's device alive
    std::vector<vm::Ref<hal::BufferView>> views;
  };
  std::unique_ptr<tools::LlamaParameters> file_;
  std::mutex mu_;
  std::map<std::pair<hal::Device*, int32_t>, Uploaded> uploaded_;
};

Parameters* AsParameters(py::handle object) {
  if (!py::isinstance<Parameters>(object)) return nullptr;
  return &object.cast<Parameters&>();
}

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
  py::class_<Parameters>(m, "Parameters",
                         "The weights of a llama2.c (.bin) or GGUF (.gguf) checkpoint, mapped once "
                         "and uploaded once per device; pass it as the last argument of a call "
                         "(module.generate(prompt, max_tokens, parameters)).")
      .def(py::init([](py::object path) {
             std::string p = py::str(py::module_::import("os").attr("fspath")(path));
             auto file = [&] {
               py::gil_scoped_release unlocked;
               return tools::LlamaParameters::Open(p);
             }();
             return std::make_unique<Parameters>(ValueOrRaise(std::move(file)));
           }),
           py::arg("path"))
      .def_property_readonly("path", [](Parameters& p) { return p.file().path(); })
      .def_property_readonly("names", [](Parameters& p) {
        std::vector<std::string> names;
        for (const auto& w : p.file().weights()) names.push_back(w.name);
        return names;
      })
      .def_property_readonly("config", [](Parameters& p) {
        const auto& c = p.file().config();
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
      .def("__len__", [](Parameters& p) { return p.file().weights().size(); })
      .def("__repr__", [](Parameters& p) {
        return StrCat("hexir.Parameters('", p.file().path(), "', ", p.file().weights().size(), " tensors)");
      });
}

}  // namespace hexir::python
