#include "tools/hexir-dump/dump.h"

#include <cstdio>
#include <sstream>

#include "vm/disassembler.h"

namespace hexir::tools {
namespace {

std::string Hex(const uint8_t* data, size_t size, size_t limit) {
  std::string out;
  char buf[4];
  for (size_t i = 0; i < size && i < limit; ++i) {
    std::snprintf(buf, sizeof(buf), "%02x", data[i]);
    if (i) out += ' ';
    out += buf;
  }
  if (size > limit) out += " ...";
  return out;
}

// Strings may hold anything: print them C-escaped so one entry stays on one line.
std::string Quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    unsigned char u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20 || u >= 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", u);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

void Attrs(std::ostream& os, const char* indent,
           const std::vector<std::pair<std::string_view, std::string_view>>& attrs) {
  for (const auto& [k, v] : attrs) os << indent << "attr " << k << " = " << Quote(v) << '\n';
}

}  // namespace

std::string DumpModule(const vm::Module& module, const DumpOptions& options) {
  std::ostringstream os;
  const uint8_t* base = module.bytes().data();
  os << "module " << Quote(module.name()) << '\n';
  os << "  format " << (module.version() >> 16) << '.' << (module.version() & 0xFFFF) << ", "
     << module.bytes().size() << " bytes\n";
  Attrs(os, "  ", module.attrs());
  if (!module.devices().empty()) {
    os << "  devices:";
    for (size_t i = 0; i < module.devices().size(); ++i)
      os << ' ' << i << '=' << module.devices()[i];
    os << '\n';
  }
  os << "  globals: " << module.value_global_count() << " value, " << module.ref_global_count()
     << " ref\n";
  if (module.initializer() >= 0) {
    os << "  initializer: #" << module.initializer() << " "
       << Quote(module.functions()[module.initializer()].name) << '\n';
  }

  os << "imports (" << module.imports().size() << ")\n";
  for (size_t i = 0; i < module.imports().size(); ++i) {
    const vm::ImportInfo& im = module.imports()[i];
    os << "  #" << i << ' ' << im.name << " : " << im.signature << " (module "
       << Quote(im.module) << ")\n";
  }

  os << "exports (" << module.exports().size() << ")\n";
  for (const vm::ExportInfo& e : module.exports()) {
    os << "  " << Quote(e.name) << " -> function #" << e.function << '\n';
  }

  os << "functions (" << module.functions().size() << ")\n";
  for (uint32_t i = 0; i < module.functions().size(); ++i) {
    const vm::FunctionInfo& fn = module.functions()[i];
    os << "  #" << i << ' ' << Quote(fn.name) << " : " << fn.signature << "  registers v="
       << fn.value_register_count << " r=" << fn.ref_register_count << "  code "
       << fn.code_length << " words\n";
    Attrs(os, "    ", fn.attrs);
    if (!options.code) continue;
    for (uint32_t offset = 0; offset < fn.code_length;) {
      os << "    " << vm::DisassembleInstruction(module, i, offset, &offset) << '\n';
    }
  }

  os << "rodata (" << module.rodata_count() << ")\n";
  for (size_t i = 0; i < module.rodata_count(); ++i) {
    Span<const uint8_t> ro = module.rodata(i);
    os << "  #" << i << " offset " << (ro.data() - base) << " size " << ro.size() << ": "
       << Hex(ro.data(), ro.size(), options.preview_bytes) << '\n';
  }

  os << "executables (" << module.executable_count() << ")\n";
  for (size_t i = 0; i < module.executable_count(); ++i) {
    auto exe = module.executable(i);
    if (!exe.ok()) {
      os << "  #" << i << " error: " << exe.status().ToString() << '\n';
      continue;
    }
    os << "  #" << i << " format " << Quote(exe->format) << " offset " << (exe->data - base)
       << " size " << exe->size << ": " << Hex(exe->data, exe->size, options.preview_bytes)
       << '\n';
    for (size_t e = 0; e < exe->entry_points.size(); ++e) {
      os << "    entry " << e << ": " << exe->entry_points[e] << '\n';
      if (e < exe->entry_written_bindings.size()) {  // absent: every binding may be written
        const uint64_t mask = exe->entry_written_bindings[e];
        os << "      writes bindings:";
        for (int b = 0; b < 64; ++b) {
          if ((mask >> b) & 1) os << ' ' << b;
        }
        os << (mask == 0 ? " none" : "") << '\n';  // bindings past 63 count as written
      }
    }
    Attrs(os, "    ", exe->attrs);
  }

  os << "strings (" << module.strings().size() << ")\n";
  for (size_t i = 0; i < module.strings().size(); ++i) {
    os << "  #" << i << ' ' << Quote(module.strings()[i]) << '\n';
  }
  return os.str();
}

}  // namespace hexir::tools
