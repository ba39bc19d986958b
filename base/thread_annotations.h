// Lock rules as annotations, checked by clang's -Wthread-safety (tools/check_thread_safety.sh
// compiles the annotated files with clang++-22 -Werror=thread-safety; g++ ignores them).
//
//   Mutex mu_;
//   int count_ GUARDED_BY(mu_);          // read or written only with mu_ held
//   void BumpLocked() REQUIRES(mu_);     // callers hold mu_
//   void Bump() EXCLUDES(mu_);           // callers must not hold mu_ (it takes it)
//
// A lambda run with the lock held (a condition-variable predicate) says so:
// `[&]() REQUIRES(mu_) { return count_ > 0; }`.
#pragma once

#if defined(__clang__)
#define HEXIR_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define HEXIR_THREAD_ANNOTATION(x)
#endif

#define CAPABILITY(x) HEXIR_THREAD_ANNOTATION(capability(x))
#define SCOPED_CAPABILITY HEXIR_THREAD_ANNOTATION(scoped_lockable)
#define GUARDED_BY(x) HEXIR_THREAD_ANNOTATION(guarded_by(x))
#define PT_GUARDED_BY(x) HEXIR_THREAD_ANNOTATION(pt_guarded_by(x))
#define REQUIRES(...) HEXIR_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define EXCLUDES(...) HEXIR_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define ACQUIRE(...) HEXIR_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define RELEASE(...) HEXIR_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define TRY_ACQUIRE(...) HEXIR_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
#define ASSERT_CAPABILITY(x) HEXIR_THREAD_ANNOTATION(assert_capability(x))
// For code the analysis cannot follow (say why where it is used).
#define NO_THREAD_SAFETY_ANALYSIS HEXIR_THREAD_ANNOTATION(no_thread_safety_analysis)
