// The host switch hexir-specialize-dispatches writes around a specialized dispatch, as
// hexir-merge-specialization-switches finds it:
//
//   %hot = arith.cmpi eq, %dim, %c1 : index       (several hot dims: an arith.andi of such)
//   %r = scf.if %hot -> (...) { specialized dispatch } else { generic dispatch }
//          {hexir.specialization_switch}
//
// The attribute is a statement that either branch computes the same values (so a switch
// whose condition is known may be replaced by one of its branches); nothing else reads it,
// and it goes with the scf.if at convert-scf-to-cf.
#pragma once

namespace hexir {

inline constexpr char kSpecializationSwitchAttr[] = "hexir.specialization_switch";

}  // namespace hexir
