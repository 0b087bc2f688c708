// Happens-before annotations for ThreadSanitizer at oneTBB hand-offs.
//
// Why: Debian's libtbb is not built with -fsanitize=thread, so TSan does not
// see the synchronization inside it (task queues, stealing, waits). Data a
// thread writes before handing work to TBB and another thread reads inside
// the task then looks racy. The shard marks each hand-off explicitly: the
// sender calls TsanRelease(x) after its writes, the receiver TsanAcquire(x)
// before its reads. In normal builds these compile to nothing.
//
// What stays reported as a false positive is only TBB's own header code
// (task objects, partitioners, ranges); tests/pserver/tsan_suppressions.txt
// suppresses exactly those by top frame, never fabps frames.
#ifndef FABPS_PSERVER_TSAN_ANNOTATIONS_H_
#define FABPS_PSERVER_TSAN_ANNOTATIONS_H_

#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#endif

namespace fabps::pserver {

#if defined(__SANITIZE_THREAD__)
inline void TsanRelease(const void* addr) {
  __tsan_release(const_cast<void*>(addr));
}
inline void TsanAcquire(const void* addr) {
  __tsan_acquire(const_cast<void*>(addr));
}
#else
inline void TsanRelease(const void*) {}
inline void TsanAcquire(const void*) {}
#endif

}  // namespace fabps::pserver

#endif  // FABPS_PSERVER_TSAN_ANNOTATIONS_H_
