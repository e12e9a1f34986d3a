// The API level we build against; systemLibrary targets take no cSettings.
// (_FILE_OFFSET_BITS is not set: off_t is 64-bit on 64-bit Linux already,
// and defining it here makes Glibc types clash with the Glibc module.)
#define FUSE_USE_VERSION 314
#include <fuse3/fuse_lowlevel.h>
#include <fuse3/fuse_opt.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

// The caller's thread id, which the kernel puts in each FUSE request the
// thread makes (glibc's gettid() needs _GNU_SOURCE, which Swift does not set).
static inline int quire_fuse_thread_id(void) { return (int)syscall(SYS_gettid); }
