#include "vm/native_module.h"

namespace hexir::vm {
namespace {

// Splits "args_results" into its parts; a signature without '_' has no results ("ri" == "ri_").
void SplitSignature(std::string_view s, std::string_view* args, std::string_view* results) {
  size_t us = s.find('_');
  *args = s.substr(0, us);
  *results = us == std::string_view::npos ? std::string_view() : s.substr(us + 1);
}

}  // namespace

bool SignatureMatches(std::string_view pattern, std::string_view sig) {
  std::string_view pargs, presults, sargs, sresults;
  SplitSignature(pattern, &pargs, &presults);
  SplitSignature(sig, &sargs, &sresults);
  if (presults != sresults) return false;                     // results never variadic
  if (sig.find('*') != std::string_view::npos) return false;  // exact signatures only
  if (!pargs.empty() && pargs.back() == '*') {
    pargs.remove_suffix(1);
    return sargs.substr(0, pargs.size()) == pargs;
  }
  return pargs == sargs;
}

}  // namespace hexir::vm
