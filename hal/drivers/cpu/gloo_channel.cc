#include "hal/drivers/cpu/gloo_channel.h"

#include <dlfcn.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

#include "hal/drivers/cpu/channel_failure.h"
#include "hal/drivers/cpu/gloo_shim.h"
#include "hal/drivers/cpu/widened_reduction.h"
#include "hal/element_type.h"

namespace hexir::hal::cpu {
namespace {

constexpr size_t kErrorBytes = 2048;

// Gloo's TCP pairs write with writev(2), which raises SIGPIPE when a peer has closed its end (a
// rank that failed or died): the default action would kill this process instead of letting the
// collective fail with a named error. Ignored here unless the program installed a handler.
void IgnoreSigpipeUnlessHandled() {
  struct sigaction current = {};
  if (sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL &&
      !(current.sa_flags & SA_SIGINFO)) {
    signal(SIGPIPE, SIG_IGN);
  }
}

struct GlooApi {
  decltype(&hexir_gloo_connect) connect = nullptr;
  decltype(&hexir_gloo_run) run = nullptr;
  decltype(&hexir_gloo_fail) fail = nullptr;
  decltype(&hexir_gloo_destroy) destroy = nullptr;
};

// Where libhexir_gloo.so may be, in the order tried (see gloo_channel.h).
std::vector<std::string> LibraryCandidates() {
  std::vector<std::string> paths;
  const char* env = std::getenv("HEXIR_GLOO_LIBRARY");
  if (env != nullptr && *env != '\0') return {env};
  constexpr const char* kName = "libhexir_gloo.so";
  constexpr const char* kInTree = "hal/drivers/cpu/libhexir_gloo.so";
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n > 0) {
    exe[n] = '\0';
    std::string dir(exe);
    dir = dir.substr(0, dir.rfind('/'));
    paths.push_back(dir + "/" + kName);
    paths.push_back(std::string(exe) + ".runfiles/hexir/" + kInTree);
    for (int up = 0; up < 4 && !dir.empty(); ++up) {  // bazel-bin/<package>/<binary>
      dir = dir.substr(0, dir.rfind('/'));
      paths.push_back(dir + "/" + kInTree);
    }
  }
  for (const char* var : {"RUNFILES_DIR", "TEST_SRCDIR"}) {
    const char* root = std::getenv(var);
    if (root != nullptr && *root != '\0') paths.push_back(std::string(root) + "/hexir/" + kInTree);
  }
  paths.push_back(kName);
  return paths;
}

StatusOr<const GlooApi*> Load() {
  std::string tried;
  void* lib = nullptr;
  for (const std::string& path : LibraryCandidates()) {
    if (path.find('/') != std::string::npos && access(path.c_str(), R_OK) != 0) continue;
    lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib != nullptr) break;
    const char* err = dlerror();
    tried += StrCat("; ", path, ": ", err ? err : "unknown dlopen error");
  }
  if (lib == nullptr) {
    return Unavailable("gloo channel: libhexir_gloo.so could not be loaded (build "
                       "//hal/drivers/cpu:libhexir_gloo.so, apt-get install libgloo-dev, or "
                       "name it in HEXIR_GLOO_LIBRARY)",
                       tried);
  }
  auto* api = new GlooApi();
  api->connect = reinterpret_cast<decltype(api->connect)>(dlsym(lib, "hexir_gloo_connect"));
  api->run = reinterpret_cast<decltype(api->run)>(dlsym(lib, "hexir_gloo_run"));
  api->fail = reinterpret_cast<decltype(api->fail)>(dlsym(lib, "hexir_gloo_fail"));
  api->destroy = reinterpret_cast<decltype(api->destroy)>(dlsym(lib, "hexir_gloo_destroy"));
  if (!api->connect || !api->run || !api->fail || !api->destroy) {
    delete api;
    return Unavailable("gloo channel: libhexir_gloo.so lacks the hexir_gloo_* functions");
  }
  return static_cast<const GlooApi*>(api);
}

StatusOr<const GlooApi*> LoadGlooApi() {
  static const StatusOr<const GlooApi*> api = Load();
  return api;
}

// The shim's type for a reduction over `element_type` (f16/bf16: f32, widened_reduction.h).
int32_t ReductionType(int32_t element_type) {
  switch (static_cast<ElementType>(element_type)) {
    case ElementType::kF32: case ElementType::kF16: case ElementType::kBF16: return HEXIR_GLOO_F32;
    case ElementType::kF64: return HEXIR_GLOO_F64;
    case ElementType::kI8: return HEXIR_GLOO_I8;
    case ElementType::kI16: return HEXIR_GLOO_I16;
    case ElementType::kI32: return HEXIR_GLOO_I32;
    case ElementType::kI64: return HEXIR_GLOO_I64;
    default: return HEXIR_GLOO_BYTES;
  }
}

class GlooChannel final : public FailureNotifyingChannel {
 public:
  GlooChannel(const GlooApi& api, hexir_gloo_group* group, int32_t rank, int32_t count,
              std::chrono::nanoseconds timeout)
      : FailureNotifyingChannel(rank, count, timeout), api_(api), group_(group) {}
  ~GlooChannel() override { api_.destroy(group_); }

  std::string_view backend() const override { return "gloo"; }

 private:
  // Posts the notice in the store and closes this rank's connections (gloo_shim.h).
  void NotifyPeers(const std::string& notice) override { api_.fail(group_, notice.c_str()); }

  Status RunCollective(const Operation& op, const std::string& what) override {
    const uint64_t element_bytes = ElementTypeByteSize(op.element_type);
    const bool reduces = CollectiveReduces(op.kind);
    const WidenedReduction wide(op, count());
    hexir_gloo_op g{};
    g.kind = int32_t(op.kind);
    g.reduction = int32_t(op.reduction);
    g.type = reduces ? ReductionType(op.element_type) : HEXIR_GLOO_BYTES;
    g.count = reduces ? op.count : op.count * element_bytes;
    g.peer = op.peer;
    g.send = wide.send();
    g.recv = wide.recv();
    g.sequence = uint32_t(sequence());
    g.timeout_ms = std::max<int64_t>(1, timeout().count() / 1000000);
    if (op.kind == CollectiveKind::kSend) g.slot = ++sent_[op.peer];
    if (op.kind == CollectiveKind::kRecv) g.slot = ++received_[op.peer];
    char error[kErrorBytes] = {};
    const auto start = std::chrono::steady_clock::now();
    const int rc = api_.run(group_, &g, error, sizeof(error));
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    switch (rc) {
      case HEXIR_GLOO_OK: break;
      case HEXIR_GLOO_TIMED_OUT: return TimedOut(what, seconds);
      case HEXIR_GLOO_PEER_FAILED: return PeerFailed(what, error);
      default:
        return Aborted(what, ": lost its peers after ", seconds,
                       " s (a rank died or left the group): ", error);
    }
    wide.NarrowResult();
    return Status::Ok();
  }

  const GlooApi& api_;
  hexir_gloo_group* group_;
  std::map<int32_t, uint64_t> sent_, received_;  // send/recv messages per peer (Gloo slots)
};

bool IsLocalAddress(const std::string& address) {
  if (address == "localhost" || address.rfind("127.", 0) == 0 || address == "::1") return true;
  char host[256] = {};
  return gethostname(host, sizeof(host) - 1) == 0 && address == host;
}

StatusOr<int32_t> ReadCount(const char* name, int32_t min) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return InvalidArgument(name, " is not set");
  char* end = nullptr;
  long value = std::strtol(text, &end, 10);
  if (*end != '\0' || value < min || value > (1 << 20)) {
    return InvalidArgument(name, "='", text, "' is not a number of at least ", min);
  }
  return int32_t(value);
}

}  // namespace

bool LaunchedByTorchrun() {
  return std::getenv("RANK") != nullptr && std::getenv("WORLD_SIZE") != nullptr;
}

StatusOr<LaunchEnvironment> ReadLaunchEnvironment() {
  LaunchEnvironment launch;
  HEXIR_ASSIGN_OR_RETURN(launch.world_size, ReadCount("WORLD_SIZE", 1));
  HEXIR_ASSIGN_OR_RETURN(launch.rank, ReadCount("RANK", 0));
  if (launch.rank >= launch.world_size) {
    return InvalidArgument("RANK=", launch.rank, " is not below WORLD_SIZE=", launch.world_size);
  }
  const char* rendezvous = std::getenv("HEXIR_RENDEZVOUS");
  const char* master = std::getenv("MASTER_ADDR");
  const char* port = std::getenv("MASTER_PORT");
  const bool local_master = master == nullptr || IsLocalAddress(master);
  if (rendezvous != nullptr && *rendezvous != '\0') {
    launch.rendezvous = rendezvous;
    if (launch.rendezvous.rfind("file:", 0) != 0 || launch.rendezvous.size() == 5) {
      return InvalidArgument("HEXIR_RENDEZVOUS='", rendezvous,
                             "': expected file:PATH (a directory every rank can reach)");
    }
  } else if (master != nullptr && port != nullptr && local_master) {
    launch.rendezvous = StrCat("file:/tmp/hexir-rendezvous-", port);
  } else {
    return InvalidArgument(
        "a torchrun-style launch (RANK, WORLD_SIZE) needs a rendezvous: HEXIR_RENDEZVOUS=file:PATH "
        "(a directory every rank can reach), or MASTER_ADDR naming this machine and MASTER_PORT "
        "(Debian's Gloo has no TCP store, so MASTER_ADDR=",
        master ? master : "(unset)", " cannot be reached by itself)");
  }
  const char* hostname = std::getenv("HEXIR_GLOO_HOSTNAME");
  if (hostname != nullptr && *hostname != '\0') {
    launch.hostname = hostname;
  } else if (local_master) {
    launch.hostname = "127.0.0.1";
  } else {
    char host[256] = {};
    gethostname(host, sizeof(host) - 1);
    launch.hostname = host;
  }
  return launch;
}

StatusOr<std::vector<vm::Ref<HostChannel>>> CreateGlooChannels(const LaunchEnvironment* launch,
                                                               int32_t local_count,
                                                               std::chrono::nanoseconds timeout) {
  if (local_count < 1) return InvalidArgument("gloo channel: ", local_count, " ranks requested");
  HEXIR_ASSIGN_OR_RETURN(const GlooApi* api, LoadGlooApi());
  IgnoreSigpipeUnlessHandled();
  if (launch != nullptr) {  // Gloo's FileStore needs its directory to exist
    const std::string dir = launch->rendezvous.substr(5);
    if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
      return Unavailable("gloo channel: rendezvous directory '", dir,
                         "' cannot be created: ", std::strerror(errno));
    }
  }
  // Every creation is a fresh group: its keys carry the process's creation number.
  static std::atomic<int> creations{0};
  const std::string prefix = StrCat("hexir/channel/", creations++);
  const int32_t first = launch ? launch->rank * local_count : 0;
  const int32_t world = launch ? launch->world_size * local_count : local_count;
  const std::string store = launch ? launch->rendezvous : "";
  const std::string hostname = launch ? launch->hostname : "127.0.0.1";
  std::vector<hexir_gloo_group*> groups(local_count, nullptr);
  char error[kErrorBytes] = {};
  const auto start = std::chrono::steady_clock::now();
  const int rc = api->connect(store.c_str(), prefix.c_str(), hostname.c_str(), first, local_count,
                              world, std::max<int64_t>(1, timeout.count() / 1000000),
                              groups.data(), error, sizeof(error));
  if (rc != HEXIR_GLOO_OK) {
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const std::string where = store.empty() ? std::string("in-process") : store;
    const std::string message =
        StrCat("gloo channel: ranks ", first, "..", first + local_count - 1, " of ", world,
               " could not join through the ", where, " rendezvous after ", seconds, " s: ", error);
    if (seconds * 1e9 >= double(timeout.count())) return DeadlineExceeded(message);
    return Unavailable(message);
  }
  std::vector<vm::Ref<HostChannel>> channels;
  for (int32_t i = 0; i < local_count; ++i) {
    channels.push_back(
        vm::Ref<HostChannel>(vm::MakeRef<GlooChannel>(*api, groups[i], first + i, world, timeout)));
  }
  return channels;
}

}  // namespace hexir::hal::cpu
