// The C interface of libhexir_gloo.so, the one object that links Gloo (Debian libgloo-dev, a
// C++ library that throws). The CPU driver dlopens it (gloo_channel.cc) the way it dlopens
// libmpi, so binaries that never make a Gloo channel neither load libgloo nor need it
// installed (the GPU machine has none). Nothing crosses this boundary but C types; every Gloo
// exception is caught inside and returned as a code and a message.
//
// Ownership: a group from hexir_gloo_connect is owned by the caller until
// hexir_gloo_destroy. Thread-safety: one thread at a time per group.
#pragma once

#include <stddef.h>
#include <stdint.h>

extern "C" {

typedef struct hexir_gloo_group hexir_gloo_group;

// Element types a reduction understands; anything else moves as bytes (HEXIR_GLOO_BYTES).
enum {
  HEXIR_GLOO_F32 = 0, HEXIR_GLOO_F64 = 1, HEXIR_GLOO_I8 = 2, HEXIR_GLOO_I16 = 3,
  HEXIR_GLOO_I32 = 4, HEXIR_GLOO_I64 = 5, HEXIR_GLOO_BYTES = 6,
};

// Result codes of hexir_gloo_connect / hexir_gloo_run.
enum {
  HEXIR_GLOO_OK = 0,
  HEXIR_GLOO_TIMED_OUT = 1,    // the operation's timeout passed
  HEXIR_GLOO_PEER_FAILED = 2,  // a peer posted a failure notice: the message is that notice
  HEXIR_GLOO_ERROR = 3,        // anything else (a broken connection, bad arguments)
};

// kind and reduction use hal/channel.h's codes (CollectiveKind, ReductionOp).
struct hexir_gloo_op {
  int32_t kind;
  int32_t reduction;
  int32_t type;         // HEXIR_GLOO_*
  uint64_t count;       // elements of `type` (bytes for HEXIR_GLOO_BYTES)
  int32_t peer;         // root of a broadcast; destination / source of send / recv
  const void* send;
  void* recv;
  uint32_t sequence;    // the channel's collective number (a Gloo tag)
  uint64_t slot;        // send / recv: the pair's message number (same on both ends)
  int64_t timeout_ms;
};

// Connects ranks first_rank .. first_rank + local_count - 1 of a group of world_size (one
// thread each, all at once), rendezvousing through `store`: "" for a store shared by these
// local ranks only (in-process group: local_count == world_size), "file:PATH" for a
// gloo::rendezvous::FileStore in directory PATH (every process of the group names the same
// one). `prefix` separates groups made over one store; `hostname` is the address the ranks
// of this process listen on. On success groups[i] is rank first_rank + i.
int hexir_gloo_connect(const char* store, const char* prefix, const char* hostname,
                       int32_t first_rank, int32_t local_count, int32_t world_size,
                       int64_t timeout_ms, hexir_gloo_group** groups, char* error,
                       size_t error_size);

// Runs one collective to completion; a send returns once posted (its bytes copied), and is
// waited for after the group's next other operation (so every rank may send before it
// receives). On HEXIR_GLOO_TIMED_OUT or HEXIR_GLOO_ERROR the caller
// should hexir_gloo_fail the group.
int hexir_gloo_run(hexir_gloo_group* group, const struct hexir_gloo_op* op, char* error,
                   size_t error_size);

// Posts `notice` ("rank 2 failed: ...") in the store for the peers and closes this rank's
// connections, so peers blocked in a collective with it fail at once.
void hexir_gloo_fail(hexir_gloo_group* group, const char* notice);

void hexir_gloo_destroy(hexir_gloo_group* group);

}  // extern "C"
