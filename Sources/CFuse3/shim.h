// The API level we build against; systemLibrary targets take no cSettings.
#define FUSE_USE_VERSION 314
#define _FILE_OFFSET_BITS 64
#include <fuse3/fuse_lowlevel.h>
#include <fuse3/fuse_opt.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <errno.h>
