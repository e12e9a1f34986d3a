/*
 * fuse-floor: the least a FUSE server can cost, for tools/bench-fs.
 *
 *   fuse-floor SOURCE MOUNTPOINT
 *
 * Serves the regular files of the flat folder SOURCE read-only from memory
 * (read in whole at start), with everything the kernel may cache cached:
 * entries and attributes for a day, pages kept across opens (keep_cache).
 * Each open and release is still a round trip to this process, as for every
 * FUSE server; the handlers do nothing else. Runs in the foreground with
 * libfuse's multi-threaded loop (as passthrough_ll and quire do); unmount
 * with fusermount3 -u.
 */
#define FUSE_USE_VERSION 34
#include <fuse_lowlevel.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct entry { char *name; char *data; size_t size; };
static struct entry *entries;
static size_t count;
static const double forever = 86400.0;

static int by_name(const void *a, const void *b) {
    return strcmp(((const struct entry *)a)->name, ((const struct entry *)b)->name);
}

/* Inode 1 is the folder; file i is inode i + 2. */
static void attributes(fuse_ino_t ino, struct stat *st) {
    memset(st, 0, sizeof *st);
    st->st_ino = ino;
    st->st_uid = getuid();
    st->st_gid = getgid();
    if (ino == FUSE_ROOT_ID) {
        st->st_mode = S_IFDIR | 0555;
        st->st_nlink = 2;
    } else {
        st->st_mode = S_IFREG | 0444;
        st->st_nlink = 1;
        st->st_size = (off_t)entries[ino - 2].size;
    }
}

static struct entry *file_of(fuse_ino_t ino) {
    return ino >= 2 && ino - 2 < count ? &entries[ino - 2] : NULL;
}

static void floor_lookup(fuse_req_t req, fuse_ino_t parent, const char *name) {
    struct entry key = { .name = (char *)name };
    struct entry *found = parent == FUSE_ROOT_ID ? bsearch(&key, entries, count, sizeof *entries, by_name) : NULL;
    if (!found) { fuse_reply_err(req, ENOENT); return; }
    struct fuse_entry_param e = { .ino = (fuse_ino_t)(found - entries) + 2, .attr_timeout = forever, .entry_timeout = forever };
    attributes(e.ino, &e.attr);
    fuse_reply_entry(req, &e);
}

static void floor_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
    (void)fi;
    if (ino != FUSE_ROOT_ID && !file_of(ino)) { fuse_reply_err(req, ENOENT); return; }
    struct stat st;
    attributes(ino, &st);
    fuse_reply_attr(req, &st, forever);
}

static void floor_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi) {
    (void)fi;
    if (ino != FUSE_ROOT_ID) { fuse_reply_err(req, ENOTDIR); return; }
    char *buf = malloc(size);
    size_t used = 0;
    for (size_t i = (size_t)off; i < count; i++) {
        struct stat st = { .st_ino = i + 2, .st_mode = S_IFREG };
        size_t n = fuse_add_direntry(req, buf + used, size - used, entries[i].name, &st, (off_t)i + 1);
        if (n > size - used) break;
        used += n;
    }
    fuse_reply_buf(req, buf, used);
    free(buf);
}

static void floor_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
    if (!file_of(ino)) { fuse_reply_err(req, ENOENT); return; }
    if ((fi->flags & O_ACCMODE) != O_RDONLY) { fuse_reply_err(req, EROFS); return; }
    fi->keep_cache = 1;
    fuse_reply_open(req, fi);
}

static void floor_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi) {
    (void)fi;
    struct entry *file = file_of(ino);
    if (!file) { fuse_reply_err(req, ENOENT); return; }
    if ((size_t)off >= file->size) { fuse_reply_buf(req, NULL, 0); return; }
    size_t n = file->size - (size_t)off < size ? file->size - (size_t)off : size;
    fuse_reply_buf(req, file->data + off, n);
}

static void floor_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
    (void)ino; (void)fi;
    fuse_reply_err(req, 0);
}

static const struct fuse_lowlevel_ops operations = {
    .lookup = floor_lookup, .getattr = floor_getattr, .readdir = floor_readdir,
    .open = floor_open, .read = floor_read, .release = floor_release,
};

static int load(const char *source) {
    DIR *dir = opendir(source);
    if (!dir) { perror(source); return -1; }
    size_t capacity = 1024;
    entries = malloc(capacity * sizeof *entries);
    struct dirent *d;
    while ((d = readdir(dir))) {
        char path[4096];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", source, d->d_name);
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) continue;
        FILE *f = fopen(path, "rb");
        if (!f) { perror(path); return -1; }
        if (count == capacity) entries = realloc(entries, (capacity *= 2) * sizeof *entries);
        struct entry *e = &entries[count++];
        e->name = strdup(d->d_name);
        e->size = (size_t)st.st_size;
        e->data = malloc(e->size + 1);
        if (fread(e->data, 1, e->size, f) != e->size) { perror(path); return -1; }
        fclose(f);
    }
    closedir(dir);
    qsort(entries, count, sizeof *entries, by_name);
    return 0;
}

int main(int argc, char *argv[]) {
    if (argc != 3) { fprintf(stderr, "usage: fuse-floor SOURCE MOUNTPOINT\n"); return 2; }
    if (load(argv[1]) != 0) return 1;
    char *fuse_argv[] = { argv[0], "-o", "fsname=fuse-floor,ro", NULL };
    struct fuse_args args = FUSE_ARGS_INIT(3, fuse_argv);
    struct fuse_session *se = fuse_session_new(&args, &operations, sizeof operations, NULL);
    if (!se || fuse_set_signal_handlers(se) != 0 || fuse_session_mount(se, argv[2]) != 0) return 1;
    struct fuse_loop_config config = { .clone_fd = 0, .max_idle_threads = 10 };
    int status = fuse_session_loop_mt(se, &config);
    fuse_session_unmount(se);
    fuse_remove_signal_handlers(se);
    fuse_session_destroy(se);
    return status ? 1 : 0;
}
