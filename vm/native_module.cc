#include "vm/native_module.h"

namespace hexir::vm {

bool SignatureMatches(std::string_view pattern, std::string_view sig) {
  size_t ps = pattern.find('_'), ss = sig.find('_');
  if (ps == std::string_view::npos || ss == std::string_view::npos) return false;
  std::string_view pargs = pattern.substr(0, ps), sargs = sig.substr(0, ss);
  if (pattern.substr(ps + 1) != sig.substr(ss + 1)) return false;  // results never variadic
  if (sig.find('*') != std::string_view::npos) return false;       // exact signatures only
  if (!pargs.empty() && pargs.back() == '*') {
    pargs.remove_suffix(1);
    return sargs.substr(0, pargs.size()) == pargs;
  }
  return pargs == sargs;
}

}  // namespace hexir::vm
