// Linux calls Swift's Glibc module does not import. Header only: each is a
// static inline function over the kernel's own interface.
#include <fcntl.h>
#include <malloc.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/stat.h>

// statx(2) for a file's inode number and birth time, following symlinks
// (glibc declares statx only under _GNU_SOURCE, which Swift does not set).
// Returns 0, or -1 with errno set. *has_birth is 0 where the file system
// keeps no birth time.
static inline int csystem_inode_and_birth(const char *path, unsigned long long *inode,
                                          long long *birth_seconds, unsigned int *birth_nanoseconds,
                                          int *has_birth) {
    struct statx sx;
    if (syscall(SYS_statx, AT_FDCWD, path, 0, STATX_INO | STATX_BTIME, &sx) != 0) return -1;
    *inode = sx.stx_ino;
    *has_birth = (sx.stx_mask & STATX_BTIME) != 0;
    *birth_seconds = sx.stx_btime.tv_sec;
    *birth_nanoseconds = sx.stx_btime.tv_nsec;
    return 0;
}

// mallopt(M_MMAP_THRESHOLD): a fixed threshold, so that buffers of at
// least `bytes` are mappings of their own, returned to the system when
// freed (glibc otherwise raises the threshold after each one is freed).
static inline int csystem_fix_mmap_threshold(int bytes) {
    return mallopt(M_MMAP_THRESHOLD, bytes);
}
