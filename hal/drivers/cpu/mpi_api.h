// The slice of the MPI API the CPU driver's MPI channel uses, resolved with dlopen at run time
// so that no binary links libmpi: processes that never create an MPI channel neither load it
// nor need it installed. Types come from Open MPI's <mpi.h> (Debian libopenmpi-dev); the
// predefined handles (MPI_COMM_WORLD, MPI_FLOAT, MPI_SUM, ...) are Open MPI's exported
// objects, looked up by symbol, so this is tied to Open MPI's ABI (libmpi.so.40, 4.x).
//
// Ownership: the library is loaded once per process and never unloaded.
#pragma once

#define OMPI_SKIP_MPICXX 1
#include <mpi.h>

#include "base/status.h"

namespace hexir::hal::cpu {

#define HEXIR_MPI_FUNCTIONS(X)                                                           \
  X(MPI_Initialized) X(MPI_Init_thread) X(MPI_Finalized) X(MPI_Finalize)                  \
  X(MPI_Comm_rank) X(MPI_Comm_size) X(MPI_Comm_dup) X(MPI_Comm_set_errhandler)            \
  X(MPI_Iallreduce) X(MPI_Iallgather) X(MPI_Ireduce_scatter_block) X(MPI_Ibcast)          \
  X(MPI_Isend) X(MPI_Irecv) X(MPI_Test) X(MPI_Request_free) X(MPI_Error_string)

// Open MPI's predefined handles, exported as ompi_mpi_<symbol> objects: (type, field, symbol).
#define HEXIR_MPI_HANDLES(X)                                                                \
  X(MPI_Comm, comm_world, comm_world) X(MPI_Errhandler, errors_return, errors_return)      \
  X(MPI_Datatype, byte, byte) X(MPI_Datatype, float32, float) X(MPI_Datatype, float64, double) \
  X(MPI_Datatype, int8, int8_t) X(MPI_Datatype, int16, int16_t)                            \
  X(MPI_Datatype, int32, int32_t) X(MPI_Datatype, int64, int64_t) X(MPI_Op, op_sum, op_sum) \
  X(MPI_Op, op_max, op_max) X(MPI_Op, op_min, op_min) X(MPI_Op, op_prod, op_prod)

struct MpiApi {
#define HEXIR_MPI_MEMBER_(name) decltype(&::name) name = nullptr;
  HEXIR_MPI_FUNCTIONS(HEXIR_MPI_MEMBER_)
#undef HEXIR_MPI_MEMBER_
#define HEXIR_MPI_HANDLE_MEMBER_(type, field, symbol) type field = nullptr;
  HEXIR_MPI_HANDLES(HEXIR_MPI_HANDLE_MEMBER_)
#undef HEXIR_MPI_HANDLE_MEMBER_
  int rank = 0;  // in MPI_COMM_WORLD
  int size = 1;
};

// Loads libmpi (HEXIR_MPI_LIBRARY, default libmpi.so.40), initializes MPI once
// (MPI_THREAD_SERIALIZED or better; MPI_Finalize runs at exit) and returns the table.
// Unavailable names the library when it cannot be loaded or lacks a symbol.
StatusOr<const MpiApi*> LoadMpiApi();

// "MPI_ERR_TRUNCATE: message truncated" style text of an MPI error code.
std::string MpiErrorText(const MpiApi& api, int code);

}  // namespace hexir::hal::cpu
