// libhexir_gloo.so: hexir_gloo_* (gloo_shim.h) over Gloo's rendezvous contexts, TCP transport
// and collectives. Why a separate shared object: see gloo_shim.h.
#include "hal/drivers/cpu/gloo_shim.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/broadcast.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/hash_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

// hal/channel.h's codes (bytecode ABI, never renumbered).
enum { kAllReduce = 0, kAllGather = 1, kReduceScatter = 2, kBroadcast = 3, kSend = 4, kRecv = 5 };
enum { kSum = 0, kMax = 1, kMin = 2, kProd = 3 };

// A send in flight: Gloo sends an unbound buffer only once the peer posted the matching recv,
// so a send that waited for that would deadlock every rank sending before it receives (a
// ring). The bytes are copied (the caller may reuse its buffer at once, as after MPI's eager
// send) and the send is waited for after the group's next other operation, or at destroy.
struct PendingSend {
  std::vector<uint8_t> bytes;
  std::unique_ptr<gloo::transport::UnboundBuffer> buffer;
  std::chrono::milliseconds timeout;
};

struct hexir_gloo_group {
  std::shared_ptr<gloo::rendezvous::Store> shared_store;  // outlives `store`
  std::unique_ptr<gloo::rendezvous::PrefixStore> store;
  std::shared_ptr<gloo::transport::Device> device;
  std::shared_ptr<gloo::rendezvous::Context> context;  // null once failed
  int32_t rank = 0;
  int32_t size = 1;
  std::vector<PendingSend> pending_sends;  // cleared before `context` is reset
};

namespace {

int Report(int code, const std::string& message, char* error, size_t error_size) {
  if (error != nullptr && error_size > 0) {
    size_t n = std::min(message.size(), error_size - 1);
    std::memcpy(error, message.data(), n);
    error[n] = '\0';
  }
  return code;
}

std::string NoticeKey(int32_t rank) { return "failed/" + std::to_string(rank); }

// A failure notice posted by a peer, or "" when none appears within `wait`.
std::string FindNotice(hexir_gloo_group& g, std::chrono::milliseconds wait) {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  do {
    for (int32_t r = 0; r < g.size; ++r) {
      if (r == g.rank) continue;
      try {
        g.store->wait({NoticeKey(r)}, std::chrono::milliseconds(1));
        std::vector<char> notice = g.store->get(NoticeKey(r));
        return std::string(notice.begin(), notice.end());
      } catch (const std::exception&) {  // no notice from rank r (yet)
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  } while (std::chrono::steady_clock::now() < deadline);
  return "";
}

template <typename T>
void Reduce(int32_t reduction, T* out, const T* a, const T* b, size_t n) {
  switch (reduction) {
    case kSum: for (size_t i = 0; i < n; ++i) out[i] = T(a[i] + b[i]); break;
    case kMax: for (size_t i = 0; i < n; ++i) out[i] = std::max(a[i], b[i]); break;
    case kMin: for (size_t i = 0; i < n; ++i) out[i] = std::min(a[i], b[i]); break;
    case kProd: for (size_t i = 0; i < n; ++i) out[i] = T(a[i] * b[i]); break;
  }
}

// In-place all_reduce of `count` T at `data`.
template <typename T>
void AllReduceInPlace(hexir_gloo_group& g, const hexir_gloo_op& op, void* data, uint64_t count) {
  gloo::AllreduceOptions opts(g.context);
  opts.setOutput(static_cast<T*>(data), count);
  const int32_t reduction = op.reduction;
  opts.setReduceFunction([reduction](void* out, const void* a, const void* b, size_t n) {
    Reduce<T>(reduction, static_cast<T*>(out), static_cast<const T*>(a),
              static_cast<const T*>(b), n);
  });
  opts.setTag(op.sequence);
  opts.setTimeout(std::chrono::milliseconds(op.timeout_ms));
  gloo::allreduce(opts);
}

size_t TypeBytes(int32_t type) {
  switch (type) {
    case HEXIR_GLOO_F32: case HEXIR_GLOO_I32: return 4;
    case HEXIR_GLOO_F64: case HEXIR_GLOO_I64: return 8;
    case HEXIR_GLOO_I16: return 2;
    default: return 1;
  }
}

void AllReduceTyped(hexir_gloo_group& g, const hexir_gloo_op& op, void* data, uint64_t count) {
  switch (op.type) {
    case HEXIR_GLOO_F32: return AllReduceInPlace<float>(g, op, data, count);
    case HEXIR_GLOO_F64: return AllReduceInPlace<double>(g, op, data, count);
    case HEXIR_GLOO_I8: return AllReduceInPlace<int8_t>(g, op, data, count);
    case HEXIR_GLOO_I16: return AllReduceInPlace<int16_t>(g, op, data, count);
    case HEXIR_GLOO_I32: return AllReduceInPlace<int32_t>(g, op, data, count);
    case HEXIR_GLOO_I64: return AllReduceInPlace<int64_t>(g, op, data, count);
  }
  throw std::invalid_argument("element type " + std::to_string(op.type) + " cannot be reduced");
}

void Run(hexir_gloo_group& g, const hexir_gloo_op& op) {
  const size_t element = TypeBytes(op.type);
  const size_t bytes = op.count * element;
  const auto timeout = std::chrono::milliseconds(op.timeout_ms);
  switch (op.kind) {
    case kAllReduce:  // Gloo reduces in place: the result overwrites a copy of the input
      if (op.send != op.recv) std::memmove(op.recv, op.send, bytes);
      return AllReduceTyped(g, op, op.recv, op.count);
    case kReduceScatter: {  // all_reduce of the whole input, then this rank's block
      std::vector<uint8_t> all(static_cast<const uint8_t*>(op.send),
                               static_cast<const uint8_t*>(op.send) + bytes * g.size);
      AllReduceTyped(g, op, all.data(), op.count * g.size);
      std::memcpy(op.recv, all.data() + bytes * g.rank, bytes);
      return;
    }
    case kAllGather: {  // this rank's block placed first, then gathered in place
      auto* out = static_cast<uint8_t*>(op.recv);
      if (op.send != out + bytes * g.rank) std::memmove(out + bytes * g.rank, op.send, bytes);
      gloo::AllgatherOptions opts(g.context);
      opts.setOutput(out, bytes * g.size);
      opts.setTag(op.sequence);
      opts.setTimeout(timeout);
      gloo::allgather(opts);
      return;
    }
    case kBroadcast: {
      if (g.rank == op.peer && op.send != op.recv) std::memmove(op.recv, op.send, bytes);
      gloo::BroadcastOptions opts(g.context);
      opts.setOutput(static_cast<uint8_t*>(op.recv), bytes);
      opts.setRoot(op.peer);
      opts.setTag(op.sequence);
      opts.setTimeout(timeout);
      gloo::broadcast(opts);
      return;
    }
    case kSend: {
      PendingSend pending;
      const auto* data = static_cast<const uint8_t*>(op.send);
      pending.bytes.assign(data, data + bytes);
      pending.buffer = g.context->createUnboundBuffer(pending.bytes.data(), bytes);
      pending.buffer->send(op.peer, op.slot);
      pending.timeout = timeout;
      g.pending_sends.push_back(std::move(pending));
      return;
    }
    case kRecv: {
      auto buffer = g.context->createUnboundBuffer(op.recv, bytes);
      buffer->recv(op.peer, op.slot);
      buffer->waitRecv(timeout);
      return;
    }
  }
  throw std::invalid_argument("unknown collective kind " + std::to_string(op.kind));
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int hexir_gloo_connect(
    const char* store, const char* prefix, const char* hostname, int32_t first_rank,
    int32_t local_count, int32_t world_size, int64_t timeout_ms, hexir_gloo_group** groups,
    char* error, size_t error_size) {
  std::vector<std::unique_ptr<hexir_gloo_group>> made(local_count);
  std::vector<std::string> failures(local_count);
  try {
    std::shared_ptr<gloo::rendezvous::Store> shared;
    const std::string spec = store;
    if (spec.empty()) {
      shared = std::make_shared<gloo::rendezvous::HashStore>();
    } else if (spec.rfind("file:", 0) == 0) {
      shared = std::make_shared<gloo::rendezvous::FileStore>(spec.substr(5));
    } else {
      return Report(HEXIR_GLOO_ERROR, "unknown rendezvous '" + spec + "' (expected file:PATH)",
                    error, error_size);
    }
    gloo::transport::tcp::attr attr;
    attr.hostname = hostname;
    auto device = gloo::transport::tcp::CreateDevice(attr);
    std::vector<std::thread> threads;
    for (int32_t i = 0; i < local_count; ++i) {
      made[i] = std::make_unique<hexir_gloo_group>();
      hexir_gloo_group& g = *made[i];
      g.shared_store = shared;
      g.store = std::make_unique<gloo::rendezvous::PrefixStore>(prefix, *shared);
      g.device = device;
      g.rank = first_rank + i;
      g.size = world_size;
      threads.emplace_back([&g, &failure = failures[i], timeout_ms] {
        try {
          auto context = std::make_shared<gloo::rendezvous::Context>(g.rank, g.size);
          context->setTimeout(std::chrono::milliseconds(timeout_ms));
          context->connectFullMesh(*g.store, g.device);
          g.context = std::move(context);
        } catch (const std::exception& e) {
          failure = e.what();
        }
      });
    }
    for (auto& t : threads) t.join();
  } catch (const std::exception& e) {
    return Report(HEXIR_GLOO_ERROR, e.what(), error, error_size);
  }
  for (int32_t i = 0; i < local_count; ++i) {
    if (!failures[i].empty()) {
      return Report(HEXIR_GLOO_ERROR,
                    "rank " + std::to_string(first_rank + i) + ": " + failures[i], error,
                    error_size);
    }
  }
  for (int32_t i = 0; i < local_count; ++i) groups[i] = made[i].release();
  return HEXIR_GLOO_OK;
}

__attribute__((visibility("default"))) int hexir_gloo_run(hexir_gloo_group* group,
                                                          const hexir_gloo_op* op, char* error,
                                                          size_t error_size) {
  if (!group->context) return Report(HEXIR_GLOO_ERROR, "the group failed earlier", error, error_size);
  if (op->count == 0) return HEXIR_GLOO_OK;
  const auto start = std::chrono::steady_clock::now();
  try {
    Run(*group, *op);
    if (op->kind != kSend) {  // earlier sends have had their chance to meet their recvs
      for (PendingSend& p : group->pending_sends) p.buffer->waitSend(p.timeout);
      group->pending_sends.clear();
    }
    return HEXIR_GLOO_OK;
  } catch (const std::exception& e) {
    // A timeout is reported at once (its notice must reach the peers it strands); any other
    // failure is most likely a peer's: its notice, posted before it closed its connections,
    // names it. (A FileStore polls in 10 ms steps but times out only in whole seconds.)
    if (std::chrono::steady_clock::now() - start >= std::chrono::milliseconds(op->timeout_ms)) {
      return Report(HEXIR_GLOO_TIMED_OUT, e.what(), error, error_size);
    }
    std::string notice = FindNotice(*group, std::chrono::milliseconds(300));
    if (!notice.empty()) return Report(HEXIR_GLOO_PEER_FAILED, notice, error, error_size);
    return Report(HEXIR_GLOO_ERROR, e.what(), error, error_size);
  }
}

__attribute__((visibility("default"))) void hexir_gloo_fail(hexir_gloo_group* group,
                                                            const char* notice) {
  try {
    std::string text = notice;
    group->store->set(NoticeKey(group->rank), std::vector<char>(text.begin(), text.end()));
  } catch (const std::exception&) {
  }
  group->pending_sends.clear();
  group->context.reset();  // closes this rank's connections: blocked peers fail at once
}

__attribute__((visibility("default"))) void hexir_gloo_destroy(hexir_gloo_group* group) {
  try {  // sends still in flight: give their peers the timeout to receive them
    for (PendingSend& p : group->pending_sends) p.buffer->waitSend(p.timeout);
  } catch (const std::exception&) {
  }
  group->pending_sends.clear();
  delete group;
}

}  // extern "C"
