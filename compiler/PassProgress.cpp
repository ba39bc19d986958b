#include "compiler/PassProgress.h"

#include <chrono>
#include <cstdio>
#include <mutex>
#include <string>

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace hexir::compiler {
namespace {

class PassProgress : public mlir::PassInstrumentation {
 public:
  explicit PassProgress(const char* tool) : tool_(tool) {}
  ~PassProgress() override {
    // The last pass is always drawn once (it may have come within the throttle interval), so a
    // terminal log ends with the pipeline's final stage before the line is cleared.
    if (passes_ != shown_passes_) Draw(std::chrono::steady_clock::now());
    if (shown_) std::fprintf(stderr, "\r\033[K");
  }

  void runAfterPass(mlir::Pass* pass, mlir::Operation* op) override {
    std::lock_guard<std::mutex> lock(mu_);  // nested passes may run on several threads
    ++passes_;
    // Only a pass on the root runs alone: the module is counted then (nested passes show the
    // last count, since another thread may be rewriting a sibling).
    if (!op->getParentOp()) {
      ops_ = 0;
      op->walk([&](mlir::Operation*) { ++ops_; });
    }
    // A nested pipeline's adaptor has no argument: the name shown stays its last pass's.
    if (!pass->getArgument().empty()) last_pass_ = pass->getArgument().str();
    auto now = std::chrono::steady_clock::now();
    if (shown_ && now - last_ < std::chrono::milliseconds(200)) return;
    Draw(now);
  }

 private:
  void Draw(std::chrono::steady_clock::time_point now) {
    last_ = now;
    shown_ = true;
    shown_passes_ = passes_;
    std::fprintf(stderr, "\r\033[K%s: pass %lld (%s), %lld ops (%.1f s)", tool_,
                 static_cast<long long>(passes_), last_pass_.c_str(), static_cast<long long>(ops_),
                 std::chrono::duration<double>(now - start_).count());
    std::fflush(stderr);
  }

  const char* tool_;
  bool shown_ = false;
  std::mutex mu_;
  int64_t passes_ = 0, shown_passes_ = 0, ops_ = 0;
  std::string last_pass_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now(), last_;
};

}  // namespace

std::unique_ptr<mlir::PassInstrumentation> MakePassProgress(const char* tool) {
  return std::make_unique<PassProgress>(tool);
}

}  // namespace hexir::compiler
