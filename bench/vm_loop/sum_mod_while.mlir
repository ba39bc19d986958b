// s += (i * 7) % 13 for i in [0, n) as an scf.while (the body increments its own copy of i):
// the second host loop of bench/vm_loop/run.sh.
func.func @main(%n: i64) -> i64 {
  %c0 = arith.constant 0 : i64
  %c1 = arith.constant 1 : i64
  %c7 = arith.constant 7 : i64
  %c13 = arith.constant 13 : i64
  %r:2 = scf.while (%i = %c0, %s = %c0) : (i64, i64) -> (i64, i64) {
    %more = arith.cmpi slt, %i, %n : i64
    scf.condition(%more) %i, %s : i64, i64
  } do {
  ^bb0(%i: i64, %s: i64):
    %a = arith.muli %i, %c7 : i64
    %b = arith.remsi %a, %c13 : i64
    %t = arith.addi %s, %b : i64
    %i2 = arith.addi %i, %c1 : i64
    scf.yield %i2, %t : i64, i64
  }
  return %r#1 : i64
}
