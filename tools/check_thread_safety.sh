#!/usr/bin/env bash
# Checks the lock rules written as annotations (base/thread_annotations.h: GUARDED_BY,
# REQUIRES, ...) with clang's thread-safety analysis; the build itself uses g++, which ignores
# them. Run by .ci/run before the test suite. Exit status 0 only when every annotated file
# compiles cleanly under -Werror=thread-safety AND the deliberately wrong file
# tools/thread_safety/wrong_access.cc is refused (so a check that cannot fail fails too).
set -uo pipefail
cd "$(dirname "$0")/.."

CLANG=${CLANG:-clang++-22}
command -v "$CLANG" >/dev/null || { echo "check_thread_safety: $CLANG not found"; exit 1; }
FLAGS=(-std=c++17 -fsyntax-only -Wthread-safety -Werror=thread-safety -Wno-unknown-warning-option
       -I. -I/usr/local/cuda/include)

# Every file whose locks are annotated (a new one with a Mutex belongs here).
FILES=(
  hal/queue_submission_test.cc
  hal/host_pinning.cc
  hal/semaphore.cc
  hal/drivers/cpu/cpu_device.cc
  hal/drivers/cpu/wave_runner.cc
  hal/drivers/cpu/worker_pool.cc
  hal/drivers/cuda/cuda_command_buffer.cc
  hal/drivers/cuda/cuda_graph_command_buffer.cc
  hal/drivers/cuda/cuda_repeat_kernel.cc
  hal/drivers/cuda/cuda_device.cc
  hal/drivers/cuda/cuda_peer_link.cc
  hal/drivers/cuda/cuda_argument_gate.cc
  hal/drivers/cuda/cuda_timepoints.cc
  hal/drivers/cuda/cuda_transfer_queue.cc
  hal/drivers/cuda/host_copy_pool.cc
  hal/drivers/cuda/nccl_channel.cc
)

failed=0
for f in "${FILES[@]}"; do
  if ! out=$("$CLANG" "${FLAGS[@]}" "$f" 2>&1); then
    echo "check_thread_safety: FAILED $f"
    echo "$out" | grep -E "error|note" | head -40
    failed=1
  fi
done

out=$("$CLANG" "${FLAGS[@]}" tools/thread_safety/wrong_access.cc 2>&1)
if [ $? -eq 0 ] || ! grep -q "requires holding mutex 'mu_'" <<<"$out"; then
  echo "check_thread_safety: FAILED: tools/thread_safety/wrong_access.cc compiled (the analysis is not running)"
  failed=1
fi

if [ "$failed" -ne 0 ]; then exit 1; fi
echo "check_thread_safety: ${#FILES[@]} files clean; the wrong access is refused"
