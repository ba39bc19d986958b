#!/usr/bin/env bash
# Runs its arguments with every "{rank}" replaced by this process's MPI rank (0 without
# mpirun), so one mpirun command line gives each rank its own shard files.
r=${OMPI_COMM_WORLD_RANK:-0}
args=()
for a in "$@"; do args+=("${a//\{rank\}/$r}"); done
exec "${args[@]}"
