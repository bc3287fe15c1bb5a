/* SPDX-License-Identifier: MIT */

#include <fcntl.h>
#include <inttypes.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "common/basic/elf-util.h"
#include "common/basic/hash.h"
#include "common/model/model.h"
#include "daemon/procmap/buildid.h"

#define BUILDID_CACHE_MAX 16384U
#define BID_BUCKETS 1024U

typedef struct BuildIdEntry BuildIdEntry;
struct BuildIdEntry {
        BuildIdEntry *next;
        uint32_t maj, min;
        uint64_t ino;
        bool found; /* false: the file definitely has none (not ELF, no note) */
        uint8_t size;
        uint8_t id[PERF_BUILD_ID_MAX];
};

struct BuildIdReader {
        int proc_fd;
        BuildIdEntry *buckets[BID_BUCKETS];
        size_t n_bid;
        uint64_t reads, read_failures;
        uint64_t bytes;
};

static BuildIdEntry *bid_find(BuildIdReader *m, uint32_t maj, uint32_t min, uint64_t ino) {
        uint32_t h = hash_u64(((uint64_t) maj << 52) ^ ((uint64_t) min << 32) ^ ino);

        for (BuildIdEntry *e = m->buckets[h & (BID_BUCKETS - 1)]; e; e = e->next)
                if (e->ino == ino && e->maj == maj && e->min == min)
                        return e;
        return NULL;
}

static void bid_clear(BuildIdReader *m) {
        for (size_t b = 0; b < BID_BUCKETS; b++)
                while (m->buckets[b]) {
                        BuildIdEntry *e = m->buckets[b];
                        m->buckets[b] = e->next;
                        free(e);
                        m->bytes -= sizeof(BuildIdEntry);
                }
        m->n_bid = 0;
}

static void bid_add(BuildIdReader *m, uint32_t maj, uint32_t min, uint64_t ino, bool found, const uint8_t *id,
                    size_t size) {
        uint32_t h = hash_u64(((uint64_t) maj << 52) ^ ((uint64_t) min << 32) ^ ino);
        BuildIdEntry *e;

        /* Bounded: when full, start over. Hot files are back after one read. */
        if (m->n_bid >= BUILDID_CACHE_MAX)
                bid_clear(m);
        e = calloc(1, sizeof(BuildIdEntry));
        if (!e)
                return; /* only a cache */
        m->bytes += sizeof(BuildIdEntry);
        e->maj = maj;
        e->min = min;
        e->ino = ino;
        e->found = found;
        if (found) {
                e->size = (uint8_t) size;
                memcpy(e->id, id, size);
        }
        e->next = m->buckets[h & (BID_BUCKETS - 1)];
        m->buckets[h & (BID_BUCKETS - 1)] = e;
        m->n_bid++;
}

/* The cached answer for a dev/inode: 1 with the id, 0 for a file without
 * one, -ENOENT when not cached. */
static int bid_cached(BuildIdReader *m, uint32_t maj, uint32_t min, uint64_t ino, uint8_t id[static PERF_BUILD_ID_MAX],
                      uint8_t *ret_size) {
        BuildIdEntry *e = bid_find(m, maj, min, ino);

        if (!e)
                return -ENOENT;
        if (!e->found)
                return 0;
        memcpy(id, e->id, e->size);
        *ret_size = e->size;
        return 1;
}

/* Open a candidate for the mapped file; verify it is the same file when the
 * dev/inode are known (a path may since point elsewhere). */
static int open_checked(int dirfd, const char *path, uint32_t maj, uint32_t min, uint64_t ino, bool verify,
                        struct stat *st) {
        int fd;

        fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return -errno;
        if (fstat(fd, st) < 0 || !S_ISREG(st->st_mode) ||
            (verify && (st->st_ino != ino || major(st->st_dev) != maj || minor(st->st_dev) != min))) {
                safe_close(fd);
                return -ESTALE;
        }
        return fd;
}

int buildid_reader_resolve(BuildIdReader *m, int pid_fd, uint32_t pid, uint64_t start, uint64_t end,
                           const char *path, uint32_t *maj, uint32_t *min, uint64_t *ino,
                           uint8_t id[static PERF_BUILD_ID_MAX], uint8_t *ret_size) {
        _cleanup_close_ int own_pid_fd = -EBADF, fd = -EBADF;
        char buf[MODEL_PATH_MAX + 64];
        bool known = *ino != 0;
        struct stat st;
        size_t size = 0;
        int r;

        if (known) {
                r = bid_cached(m, *maj, *min, *ino, id, ret_size);
                if (r >= 0)
                        return r;
        }

        if (pid_fd < 0) {
                char p[16];
                (void) snprintf(p, sizeof p, "%" PRIu32, pid);
                own_pid_fd = openat(m->proc_fd, p, O_PATH | O_DIRECTORY | O_CLOEXEC);
                pid_fd = own_pid_fd;
        }

        /* map_files reaches the very file mapped, deleted or in another
         * mount namespace; root/PATH the process's view; PATH ours. */
        if (pid_fd >= 0) {
                (void) snprintf(buf, sizeof buf, "map_files/%" PRIx64 "-%" PRIx64, start, end);
                fd = open_checked(pid_fd, buf, *maj, *min, *ino, false, &st);
                if (fd < 0 && path[0] == '/' && strlen(path) <= MODEL_PATH_MAX) {
                        (void) snprintf(buf, sizeof buf, "root%s", path);
                        fd = open_checked(pid_fd, buf, *maj, *min, *ino, known, &st);
                }
        }
        if (fd < 0 && path[0] == '/')
                fd = open_checked(AT_FDCWD, path, *maj, *min, *ino, known, &st);
        if (fd < 0)
                return 0;

        if (!known) {
                *maj = major(st.st_dev);
                *min = minor(st.st_dev);
                *ino = st.st_ino;
                r = bid_cached(m, *maj, *min, *ino, id, ret_size);
                if (r >= 0)
                        return r;
        }

        m->reads++;
        r = elf_util_read_build_id_fd(fd, id, PERF_BUILD_ID_MAX, &size);
        if (r >= 0 && size > 0) {
                bid_add(m, *maj, *min, *ino, true, id, size);
                *ret_size = (uint8_t) size;
                return 1;
        }
        m->read_failures++;
        /* Only definite answers are cached; I/O trouble may pass. */
        if (r >= 0 || r == -ENODATA || r == -EBADMSG || r == -E2BIG)
                bid_add(m, *maj, *min, *ino, false, NULL, 0);
        return 0;
}


int buildid_reader_new(int proc_fd, BuildIdReader **ret) {
        BuildIdReader *b;

        assert(ret);
        b = calloc(1, sizeof(BuildIdReader));
        if (!b)
                return -ENOMEM;
        b->proc_fd = proc_fd;
        *ret = b;
        return 0;
}

BuildIdReader *buildid_reader_free(BuildIdReader *b) {
        if (!b)
                return NULL;
        bid_clear(b);
        return mfree(b);
}

void buildid_reader_get_stats(const BuildIdReader *b, BuildIdReaderStats *ret) {
        *ret = (BuildIdReaderStats){
                .cache_entries = b->n_bid,
                .reads = b->reads,
                .read_failures = b->read_failures,
                .bytes = b->bytes + sizeof(BuildIdReader),
        };
}
