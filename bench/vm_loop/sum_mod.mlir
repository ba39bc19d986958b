// s += (i * 7) % 13 for i in [0, n): the host loop of bench/vm_loop/run.sh (no kernels).
func.func @main(%n: i64) -> i64 {
  %c0 = arith.constant 0 : i64
  %c1 = arith.constant 1 : i64
  %c7 = arith.constant 7 : i64
  %c13 = arith.constant 13 : i64
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%s = %c0) -> (i64) : i64 {
    %a = arith.muli %i, %c7 : i64
    %b = arith.remsi %a, %c13 : i64
    %t = arith.addi %s, %b : i64
    scf.yield %t : i64
  }
  return %r : i64
}
