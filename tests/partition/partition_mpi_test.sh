#!/usr/bin/env bash
# hexir-partition end to end: an MLP and an attention block written with sharding
# annotations only, compiled once, run on 1 rank (no mpirun), on 2 / 4 CPU devices of one
# process (hexir-run --device repeated) and under mpirun -n 2 / -n 4 (each rank given its
# shards); every rank's result must equal the annotation-free module
# run on one device, within 1e-5 relative. Also: a hidden size the 4 ranks do not divide is
# refused by name, at run time (rank count read from the channel) and at compile time
# (--partition=4).
set -uo pipefail
COMPILE=tools/hexir-compile/hexir-compile
RUN=tools/hexir-run/hexir-run
here=tests/partition
TMP=${TEST_TMPDIR:-$(mktemp -d)}
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader,tcp OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
export HEXIR_COLLECTIVE_TIMEOUT=60
have_mpirun=1
command -v mpirun >/dev/null || have_mpirun=0
# in_process N ARGS...: hexir-run on N CPU devices of one process, one rank each ("{rank}" in
# an --input/--output file name is each rank's own file).
in_process() {
  local n=$1 i devices=()
  shift
  for ((i = 0; i < n; i++)); do devices+=(--device=cpu:threads=1); done
  timeout 300 "$RUN" "${devices[@]}" "$@"
}
strip_annotations() { sed -E 's/ \{hexir\.sharding = #hexir\.sharding<[^>]*>\}//g' "$1"; }

# check NAME FUNCTION SOURCE COMPILE_FLAGS RANKS ARG:SHAPE[:SPLIT]...
check() {
  local name=$1 func=$2 source=$3 flags=$4 ranks=$5
  shift 5
  local dir=$TMP/$name
  mkdir -p "$dir"
  strip_annotations "$source" >"$dir/reference.mlir"
  "$COMPILE" "$source" --target=cpu $flags -o "$dir/sharded.vmfb" || { fail "$name: hexir-compile"; return; }
  "$COMPILE" "$dir/reference.mlir" --target=cpu -o "$dir/reference.vmfb" || { fail "$name: reference"; return; }
  local n inputs rank_inputs spec first=${ranks%% *}
  for n in $ranks; do
    mkdir -p "$dir/n$n"
    python3 "$here/npy_shards.py" make "$dir/n$n" 7 "$n" "$@" || { fail "$name: inputs"; return; }
  done
  inputs=()
  rank_inputs=()
  for spec in "$@"; do
    inputs+=("--input=@$dir/n$first/${spec%%:*}.npy")
    rank_inputs+=("--input=@DIR/${spec%%:*}.r{rank}.npy")
  done
  "$RUN" --module="$dir/reference.vmfb" --function="$func" "${inputs[@]}" --output="@$dir/reference.npy" \
    || { fail "$name: reference run"; return; }
  for n in $ranks; do
    local args=("${rank_inputs[@]//DIR/$dir/n$n}")
    if [ "$n" != 1 ]; then  # the same module on n devices of one process
      local ones=()
      for ((r = 0; r < n; r++)); do ones+=("$dir/n$n/one.r$r.npy"); done
      in_process "$n" --module="$dir/sharded.vmfb" --function="$func" "${args[@]}" "--output=@$dir/n$n/one.r{rank}.npy" \
        && python3 "$here/npy_shards.py" compare "$dir/reference.npy" "${ones[@]}" \
        && pass "$name on $n devices of one process" || fail "$name on $n devices of one process"
    fi
    if [ "$n" = 1 ]; then
      bash "$here/run_rank.sh" "$RUN" --module="$dir/sharded.vmfb" --function="$func" "${args[@]}" \
        "--output=@$dir/n1/out.r{rank}.npy" || { fail "$name: 1 rank"; continue; }
    elif [ "$have_mpirun" = 1 ]; then
      timeout 300 mpirun -n "$n" --oversubscribe bash "$here/run_rank.sh" "$RUN" --module="$dir/sharded.vmfb" \
        --function="$func" "${args[@]}" "--output=@$dir/n$n/out.r{rank}.npy" || { fail "$name: mpirun -n $n"; continue; }
    else
      continue
    fi
    local outs=()
    for ((r = 0; r < n; r++)); do outs+=("$dir/n$n/out.r$r.npy"); done
    python3 "$here/npy_shards.py" compare "$dir/reference.npy" "${outs[@]}" && pass "$name on $n rank(s)" \
      || fail "$name on $n rank(s)"
  done
}

sed "s/@H@/32/g" "$here/mlp.mlir.in" >"$TMP/mlp32.mlir"
check mlp mlp "$TMP/mlp32.mlir" "" "1 2 4" x:4x16 w1:16x32:1 b1:32:0 w2:32x16:0 b2:16
check mlp_static_2 mlp "$TMP/mlp32.mlir" "--partition=2" "2" x:4x16 w1:16x32:1 b1:32:0 w2:32x16:0 b2:16
check attention attention "$here/attention.mlir.in" "" "1 2 4" x:8x16 wq:16x16:1 wk:16x16:1 wv:16x16:1 wo:16x16:0

# compare_outputs DIR N SUFFIX OUT:DIM...: rank r's DIR/OUT${SUFFIX}.r$r.npy equals the reference
# DIR/OUT.npy (DIM r: replicated) or its shard r along DIM.
compare_outputs() {
  local d=$1 n=$2 suffix=$3 o r files
  shift 3
  for o in "$@"; do
    files=()
    for ((r = 0; r < n; r++)); do files+=("$d/${o%%:*}$suffix.r$r.npy"); done
    if [ "${o##*:}" = r ]; then
      python3 "$here/npy_shards.py" compare "$d/${o%%:*}.npy" "${files[@]}" || return 1
    else
      python3 "$here/npy_shards.py" compare-shards "$d/${o%%:*}.npy" "${o##*:}" "${files[@]}" || return 1
    fi
  done
}

# check_outputs NAME MODULE FUNCTION FLAGS RANKS SEED "ARG:SHAPE[:SPLIT]..." "OUT:DIM...":
# MODULE compiled with FLAGS, run on each rank count of RANKS (1 rank alone, N devices of one
# process, mpirun -n N), each rank given its shards; every result as compare_outputs says,
# against the annotation-free module on the whole inputs.
check_outputs() {
  local name=$1 module=$2 func=$3 flags=$4 ranks=$5 seed=$6 dir=$TMP/$1 n spec a o
  local specs=($7) outs=($8)
  mkdir -p "$dir"
  strip_annotations "$module" >"$dir/reference.mlir"
  "$COMPILE" "$module" --target=cpu $flags -o "$dir/sharded.vmfb" || { fail "$name: hexir-compile"; return; }
  "$COMPILE" "$dir/reference.mlir" --target=cpu -o "$dir/reference.vmfb" || { fail "$name: reference"; return; }
  for n in $ranks; do
    local d=$dir/n$n whole=() mine=() ref_out=() one_out=() rank_out=() launch=()
    mkdir -p "$d"
    python3 "$here/npy_shards.py" make "$d" "$seed" "$n" "${specs[@]}" || { fail "$name: inputs"; return; }
    for spec in "${specs[@]}"; do
      a=${spec%%:*}
      whole+=("--input=@$d/$a.npy")
      mine+=("--input=@$d/$a.r{rank}.npy")
    done
    for o in "${outs[@]}"; do
      ref_out+=("--output=@$d/${o%%:*}.npy")
      one_out+=("--output=@$d/${o%%:*}1.r{rank}.npy")
      rank_out+=("--output=@$d/${o%%:*}.r{rank}.npy")
    done
    "$RUN" --module="$dir/reference.vmfb" --function="$func" "${whole[@]}" "${ref_out[@]}" \
      || { fail "$name: reference run"; return; }
    if [ "$n" != 1 ]; then
      in_process "$n" --module="$dir/sharded.vmfb" --function="$func" "${mine[@]}" "${one_out[@]}" \
        && compare_outputs "$d" "$n" 1 "${outs[@]}" \
        && pass "$name on $n devices of one process" || fail "$name on $n devices of one process"
      [ "$have_mpirun" = 1 ] || continue
      launch=(timeout 300 mpirun -n "$n" --oversubscribe)
    fi
    "${launch[@]}" bash "$here/run_rank.sh" "$RUN" --module="$dir/sharded.vmfb" --function="$func" \
      "${mine[@]}" "${rank_out[@]}" || { fail "$name: $n rank(s)"; continue; }
    compare_outputs "$d" "$n" "" "${outs[@]}" && pass "$name on $n rank(s): ${outs[*]}" \
      || fail "$name on $n rank(s)"
  done
}

# Split results (split_results.mlir: rows y, columns z): backward propagation and the
# reduce_scatter (rank count read at run time, or 2 with --partition=2); each rank's y and z
# equal its rows / columns of the annotation-free module's.
split_inputs="x:8x16 w1:16x32:1 w2:32x8:0 b:8x8 w3:16x8"
check_outputs split_results "$here/split_results.mlir" split_results "" "1 2 4" 11 "$split_inputs" "y:0 z:1"
check_outputs split_results_static_2 "$here/split_results.mlir" split_results "--partition=2" "2" 11 "$split_inputs" "y:0 z:1"
# Maxima and minima over split columns (partial_extrema.mlir): the row maxima all_reduced
# ("max", every rank holds all), the row minima reduce_scattered ("min", each rank its rows).
check_outputs partial_extrema "$here/partial_extrema.mlir" extrema "" "1 2 4" 5 "x:8x16:1" "mx:r mn:0"
check_outputs partial_extrema_static_4 "$here/partial_extrema.mlir" extrema "--partition=4" "4" 5 "x:8x16:1" "mx:r mn:0"
# The row-parallel pipeline (row_parallel.mlir.in, 4 row blocks forced): the IR holds 4
# all_reduces of a block each and none of the whole result.
sed 's/@M@/64/g; s/@K@/32/g; s/@N@/48/g; s/@ATTR@/{hexir.collective_chunks = 4 : i64}/' \
  "$here/row_parallel.mlir.in" >"$TMP/row_parallel.mlir"
if "$COMPILE" "$TMP/row_parallel.mlir" --target=cpu --dump-after=hexir-partition -o "$TMP/rp.vmfb" \
     >"$TMP/rp.partitioned.mlir" 2>&1; then
  [ "$(grep -c 'hexir.all_reduce "sum" %.* : tensor<16x48xf32>' "$TMP/rp.partitioned.mlir")" = 4 ] \
    && ! grep -q 'hexir.all_reduce "sum" %.* : tensor<64x48xf32>' "$TMP/rp.partitioned.mlir" \
    && pass "row_parallel: 4 blocks of 16 rows, each all_reduced" \
    || fail "row_parallel blocks: $(grep -o 'hexir\.all_reduce.*' "$TMP/rp.partitioned.mlir")"
else
  fail "--dump-after=hexir-partition (row_parallel)"
fi
for flags in "" "--partition=2"; do
  if "$COMPILE" "$here/partial_extrema.mlir" --target=cpu $flags --dump-after=hexir-partition -o "$TMP/px.vmfb" \
       >"$TMP/px.partitioned.mlir" 2>&1; then
    rows=$([ -z "$flags" ] && echo "?" || echo 4)
    grep -q 'hexir.all_reduce "max" %.* : tensor<8xf32>' "$TMP/px.partitioned.mlir" \
      && grep -q "hexir.reduce_scatter \"min\" %.* : tensor<8xf32> -> tensor<${rows}xf32>" "$TMP/px.partitioned.mlir" \
      && ! grep -q 'hexir.all_reduce "sum"' "$TMP/px.partitioned.mlir" \
      && pass "partial_extrema ${flags:-(run-time rank count)}: all_reduce max of the 8 maxima, reduce_scatter min to ${rows} rows, nothing gathered" \
      || fail "partial_extrema ${flags:-run-time}: $(grep -o 'hexir\.[a-z_]* .*' "$TMP/px.partitioned.mlir" | grep -v channel)"
  else
    fail "--dump-after=hexir-partition (partial_extrema $flags)"
  fi
done
if "$COMPILE" "$here/split_results.mlir" --target=cpu --dump-after=hexir-partition -o "$TMP/srd.vmfb" \
     >"$TMP/srd.partitioned.mlir" 2>&1; then
  grep -q 'hexir.reduce_scatter "sum" %.* : tensor<8x8xf32> -> tensor<?x8xf32>' "$TMP/srd.partitioned.mlir" \
    && ! grep -q 'hexir.all_reduce' "$TMP/srd.partitioned.mlir" \
    && pass "run-time rank count: the partial sum reaches its rows by one reduce_scatter, no all_reduce" \
    || fail "run-time rank count: expected a reduce_scatter and no all_reduce: $(grep -o 'hexir\.[a-z_]*' "$TMP/srd.partitioned.mlir" | sort | uniq -c | tr '\n' ' ')"
else
  fail "--dump-after=hexir-partition (split_results)"
fi
if "$COMPILE" "$here/split_results.mlir" --target=cpu --partition=2 --dump-after=hexir-partition -o "$TMP/sr.vmfb" \
     >"$TMP/sr.partitioned.mlir" 2>&1; then
  grep -q 'hexir.reduce_scatter "sum"' "$TMP/sr.partitioned.mlir" && ! grep -q 'hexir.all_reduce' "$TMP/sr.partitioned.mlir" \
    && pass "--partition=2: the partial sum reaches its rows by one reduce_scatter, no all_reduce" \
    || fail "--partition=2: expected a reduce_scatter and no all_reduce: $(grep -o 'hexir\.[a-z_]*' "$TMP/sr.partitioned.mlir" | sort | uniq -c | tr '\n' ' ')"
else
  fail "--dump-after=hexir-partition"
fi

# embed_project.mlir: a lookup in a table split by vocabulary rows (partial, gathered as the
# 6x8 result), and a partial sum reaching a split of dimension 2 through a reshape (columns of
# dimension 1 before it, by reduce_scatter with --partition=2). The ids include the table's
# first and last rows; h must equal the whole lookup, z each rank's part of dimension 2.
check_embed_project() {
  local name=$1 flags=$2 ranks=$3 dir=$TMP/$1 n r
  local ids="6xi64=15 0 7 8 3 12"
  mkdir -p "$dir"
  strip_annotations "$here/embed_project.mlir" >"$dir/reference.mlir"
  "$COMPILE" "$here/embed_project.mlir" --target=cpu $flags -o "$dir/sharded.vmfb" || { fail "$name: hexir-compile"; return; }
  "$COMPILE" "$dir/reference.mlir" --target=cpu -o "$dir/reference.vmfb" || { fail "$name: reference"; return; }
  for n in $ranks; do
    mkdir -p "$dir/n$n"
    python3 "$here/npy_shards.py" make "$dir/n$n" 13 "$n" table:16x8:0 w:8x12:0 b:6x12 || { fail "$name: inputs"; return; }
    "$RUN" --module="$dir/reference.vmfb" --function=embed_project --input="$ids" --input=@$dir/n$n/{table,w,b}.npy \
      --output="@$dir/n$n/h.npy" --output="@$dir/n$n/z.npy" || { fail "$name: reference run"; return; }
    local launch=()
    if [ "$n" != 1 ]; then
      in_process "$n" --module="$dir/sharded.vmfb" --function=embed_project --input="$ids" \
        --input=@$dir/n$n/{table,w,b}.r{rank}.npy --output="@$dir/n$n/h1.r{rank}.npy" --output="@$dir/n$n/z1.r{rank}.npy" \
        && python3 "$here/npy_shards.py" compare "$dir/n$n/h.npy" $(for ((r = 0; r < n; r++)); do echo "$dir/n$n/h1.r$r.npy"; done) \
        && python3 "$here/npy_shards.py" compare-shards "$dir/n$n/z.npy" 2 $(for ((r = 0; r < n; r++)); do echo "$dir/n$n/z1.r$r.npy"; done) \
        && pass "$name on $n devices of one process" || fail "$name on $n devices of one process"
      [ "$have_mpirun" = 1 ] || continue
      launch=(timeout 300 mpirun -n "$n" --oversubscribe)
    fi
    "${launch[@]}" bash "$here/run_rank.sh" "$RUN" --module="$dir/sharded.vmfb" --function=embed_project \
      --input="$ids" --input=@$dir/n$n/{table,w,b}.r{rank}.npy --output="@$dir/n$n/h.r{rank}.npy" \
      --output="@$dir/n$n/z.r{rank}.npy" || { fail "$name: $n rank(s)"; continue; }
    local hs=() zs=()
    for ((r = 0; r < n; r++)); do hs+=("$dir/n$n/h.r$r.npy"); zs+=("$dir/n$n/z.r$r.npy"); done
    python3 "$here/npy_shards.py" compare "$dir/n$n/h.npy" "${hs[@]}" \
      && python3 "$here/npy_shards.py" compare-shards "$dir/n$n/z.npy" 2 "${zs[@]}" \
      && pass "$name on $n rank(s): the whole lookup, dimension 2 of z" || fail "$name on $n rank(s)"
  done
}
check_embed_project embed_project "" "1 2 4"
# An id outside the table (16 of 16 rows) still fails the call by the kernel's index check on
# 2 ranks (each rank's local index is out of its rows), never a silent zero row.
if [ "$have_mpirun" = 1 ] && [ -f "$TMP/embed_project/sharded.vmfb" ]; then
  d=$TMP/embed_project/n2
  out=$(timeout 300 mpirun -n 2 --oversubscribe bash "$here/run_rank.sh" "$RUN" --module="$TMP/embed_project/sharded.vmfb" \
        --function=embed_project --input="6xi64=15 0 16 8 3 12" --input=@$d/{table,w,b}.r{rank}.npy 2>&1)
  rc=$?
  [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && grep -q "out_of_range: result 0 of function 'embed_project': kernel '.*': index [0-9]* out of range \[0, 8)" <<<"$out" \
    && pass "id 16 of 16 rows on 2 ranks: out_of_range named by the kernel check" \
    || { fail "id 16 on 2 ranks: exit $rc"; echo "$out"; }
fi
check_embed_project embed_project_static_2 "--partition=2" "2"
if "$COMPILE" "$here/embed_project.mlir" --target=cpu --partition=2 --dump-after=hexir-partition -o "$TMP/ep.vmfb" \
     >"$TMP/ep.partitioned.mlir" 2>&1; then
  grep -q 'hexir.reduce_scatter "sum" %.* : tensor<12x6xf32> -> tensor<6x6xf32>' "$TMP/ep.partitioned.mlir" \
    && ! grep -q 'hexir.all_reduce "sum" %.* : tensor<16x8xf32>' "$TMP/ep.partitioned.mlir" \
    && pass "--partition=2: W's partial sum reaches its columns by one reduce_scatter; the table is never reduced" \
    || fail "--partition=2 embed_project: $(grep -o 'hexir\.[a-z_]* .*' "$TMP/ep.partitioned.mlir" | grep -v channel)"
else
  fail "--dump-after=hexir-partition (embed_project)"
fi

# A hidden size of 6 on 4 ranks: refused by name.
sed "s/@H@/6/g" "$here/mlp.mlir.in" >"$TMP/mlp6.mlir"
err=$("$COMPILE" "$TMP/mlp6.mlir" --target=cpu --partition=4 -o "$TMP/mlp6_4.vmfb" 2>&1) && fail "--partition=4 compiled a hidden size of 6"
grep -q "hexir.sharding on argument 1 of @mlp: dimension 1 (6) is not divisible by the 4 ranks" <<<"$err" \
  && pass "--partition=4, hidden 6: refused at compile time" || fail "compile-time message: $err"
if [ "$have_mpirun" = 1 ] && "$COMPILE" "$TMP/mlp6.mlir" --target=cpu -o "$TMP/mlp6.vmfb"; then
  mkdir -p "$TMP/mlp6"
  python3 "$here/npy_shards.py" make "$TMP/mlp6" 7 4 x:4x16 w1:16x4 b1:4 w2:4x16 b2:16
  out=$(timeout 300 mpirun -n 4 --oversubscribe bash "$here/run_rank.sh" "$RUN" --module="$TMP/mlp6.vmfb" --function=mlp \
        --input=@$TMP/mlp6/x.npy --input=@$TMP/mlp6/w1.npy --input=@$TMP/mlp6/b1.npy \
        --input=@$TMP/mlp6/w2.npy --input=@$TMP/mlp6/b2.npy 2>&1)
  rc=$?
  count=$(echo "$out" | grep -c "hexir-partition: dimension 1 of argument 1 of @mlp (6) is not divisible by the 4 ranks")
  [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$count" -ge 1 ] && pass "hidden 6 on 4 ranks: refused ($count ranks named it)" \
    || { fail "hidden 6 on 4 ranks: exit $rc, $count ranks named it"; echo "$out"; }
fi
[ "$have_mpirun" = 1 ] || echo "HEXIR_SKIPPED: partition_mpi_test: no mpirun for the 2- and 4-rank runs (apt-get install openmpi-bin)"
echo "$failures failure(s)"
exit "$failures"
