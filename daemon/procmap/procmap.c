/* SPDX-License-Identifier: MIT */

/*
 * Layout (see procmap.h for the semantics):
 *
 *  - Processes live in a chained hash by pid. A pid can have several
 *    incarnations (reuse while the old one is a tombstone); the chain holds
 *    the newest first, so the first match is the current one.
 *  - Each process keeps its *current* threads sorted by tid and its current
 *    executable mappings sorted by address (they never overlap), so a record
 *    costs a hash lookup and a binary search. What ended (exited threads,
 *    old names, replaced mappings) moves to append-only "old" arrays, in the
 *    order it ended, which procmap_expire() compacts. When the process
 *    itself ends, its current arrays simply get end times: it is then a
 *    tombstone, linked in a list in order of death, freed whole on expiry.
 *  - Images (path + build-id, or path + dev/inode when the build-id is
 *    unknown) are interned and reference-counted: libc mapped by a thousand
 *    processes is one string and one build-id.
 *  - A small cache maps dev/inode to the build-id read from the file, so a
 *    file is read once however often it is mapped (MMAP2 records of kernels
 *    without build-id support, and /proc scans).
 *
 * Every span is valid in [time_start, time_end); time_end is
 * PROCMAP_TIME_INFINITY while current.
 */

#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "common/basic/elf-util.h"
#include "common/perf/attr.h"
#include "daemon/procmap/procmap.h"

#define INF PROCMAP_TIME_INFINITY

/* Span flags: what a rescan of /proc (rather than a record) started or
 * ended. procmap_synthesize() replays exactly these for windows that
 * contain the rescan, since the raw side-band cannot. */
#define SPAN_START_BY_SCAN 0x01U
#define SPAN_END_BY_SCAN 0x02U

/* Process flags. */
#define PROC_FORKED 0x01U       /* start is a FORK record's time */
#define PROC_FROM_SCAN 0x02U    /* first learnt from /proc */
#define PROC_EXIT_BY_SCAN 0x04U /* a rescan found it gone */

#define BUILDID_CACHE_MAX 16384U
#define PATH_MAX_LEN 4095U /* the longest filename an MMAP2 builder takes */
#define MAPS_LINE_MAX (PATH_MAX_LEN + 256U)

typedef struct Image Image;
struct Image {
        Image *hash_next;
        uint32_t hash;
        uint32_t refcount;
        uint32_t maj, min;
        uint64_t ino;
        uint8_t kind; /* ProcMapImageKind */
        bool has_build_id;
        uint8_t build_id_size;
        uint8_t build_id[PERF_BUILD_ID_MAX];
        uint32_t visit_gen, visit_idx; /* procmap_images() dedup */
        size_t alloc_size;
        char path[];
};

typedef struct Mapping {
        uint64_t start, end, pgoff;
        uint64_t time_start, time_end;
        Image *image;    /* one reference per Mapping */
        uint32_t mflags; /* MAP_SHARED/MAP_PRIVATE as the record said */
        uint8_t prot;
        uint8_t flags; /* SPAN_* */
} Mapping;

/* A thread under one name: a rename ends one span and starts the next. */
typedef struct Thread {
        uint64_t time_start, time_end;
        uint32_t tid;
        uint8_t flags; /* SPAN_* */
        char comm[PERF_COMM_MAX];
} Thread;

typedef struct Process Process;
struct Process {
        Process *hash_next;
        Process *tomb_prev, *tomb_next;
        uint64_t start, end;
        uint64_t proc_starttime; /* /proc/PID/stat field 22 when scanned; 0 unknown */
        uint64_t old_min_end;    /* smallest time_end in the old arrays; INF when empty */
        uint32_t pid, ppid;
        uint32_t flags;
        uint32_t scan_gen;
        uint64_t scan_time; /* the last /proc scan that saw it; 0: none or at start */

        Thread *threads; /* current, sorted by tid */
        uint32_t n_threads, allocated_threads;
        Thread *old_threads; /* ended, in order of ending */
        uint32_t n_old_threads, allocated_old_threads;
        Mapping *maps; /* current, sorted by address, never overlapping */
        uint32_t n_maps, allocated_maps;
        Mapping *old_maps; /* ended, in order of ending */
        uint32_t n_old_maps, allocated_old_maps;
};

#define EXIT_MEMO_SIZE 1024U

typedef struct ExitMemo {
        uint32_t pid, tid; /* 0: empty */
        uint64_t time;
} ExitMemo;

typedef struct BuildIdEntry BuildIdEntry;
struct BuildIdEntry {
        BuildIdEntry *next;
        uint32_t maj, min;
        uint64_t ino;
        bool found; /* false: the file definitely has none (not ELF, no note) */
        uint8_t size;
        uint8_t id[PERF_BUILD_ID_MAX];
};

struct ProcMap {
        char *proc_root;
        int proc_fd;
        uint64_t retention; /* ns of perf time; INF: no automatic expiry */
        uint32_t max_processes, max_mappings, max_threads;

        Process **buckets;
        size_t n_buckets; /* power of two */
        size_t n_processes, n_dead;
        Process *tomb_head, *tomb_tail; /* sorted by end time */
        uint64_t old_min_end;           /* at most every process's old_min_end: expiry skips the walk before it */

        Image **image_buckets;
        size_t n_image_buckets;
        size_t n_images;

        BuildIdEntry **bid_buckets;
        size_t n_bid_buckets;
        size_t n_bid;

        uint64_t latest_time, last_auto_horizon;
        uint32_t scan_gen, visit_gen;

        /* The latest EXIT of each tid (a cache, by hash): a FORK that comes
         * after its task's EXIT — written late by a CPU whose vCPU was
         * descheduled between time stamp and write, or stamped by a clock
         * a little ahead — finds its end here instead of making a task
         * that never exits. */
        ExitMemo exit_memo[EXIT_MEMO_SIZE];

        uint64_t threads_live, threads_dead, mappings_live, mappings_dead;
        uint64_t bytes;
        ProcMapStats stats; /* the counters; the gauges above are filled in by procmap_get_stats() */
};

/* ---- memory accounting ---- */

static void *pm_malloc0(ProcMap *m, size_t n) {
        void *p = calloc(1, n);
        if (p)
                m->bytes += n;
        return p;
}

static void pm_free(ProcMap *m, void *p, size_t n) {
        if (!p)
                return;
        free(p);
        m->bytes -= n;
}

/* Grow *array to hold `need` elements. */
static int array_reserve(ProcMap *m, void **array, uint32_t *allocated, uint64_t need, size_t elem) {
        uint64_t n;
        void *p;

        if (need <= *allocated)
                return 0;
        if (need > UINT32_MAX / 2)
                return -ENOMEM;
        n = MAX(need, (uint64_t) *allocated * 2);
        n = MAX(n, (uint64_t) 4);
        p = reallocarray(*array, n, elem);
        if (!p)
                return -ENOMEM;
        m->bytes += (n - *allocated) * elem;
        *array = p;
        *allocated = (uint32_t) n;
        return 0;
}

/* Give memory back after expiry so churn in a long-lived process cannot
 * keep a high-water mark forever. */
static void array_shrink(ProcMap *m, void **array, uint32_t *allocated, uint32_t n, size_t elem) {
        uint32_t want;
        void *p;

        if (n == 0) {
                pm_free(m, *array, (size_t) *allocated * elem);
                *array = NULL;
                *allocated = 0;
                return;
        }
        if (*allocated <= 16 || n > *allocated / 4)
                return;
        want = MAX(n * 2, 4U);
        p = reallocarray(*array, want, elem);
        if (!p)
                return;
        m->bytes -= (size_t) (*allocated - want) * elem;
        *array = p;
        *allocated = want;
}

static void array_fit(ProcMap *m, void **array, uint32_t *allocated, uint32_t n, size_t elem) {
        void *p;

        if (n == *allocated)
                return;
        if (n == 0) {
                array_shrink(m, array, allocated, 0, elem);
                return;
        }
        p = reallocarray(*array, n, elem);
        if (!p)
                return;
        m->bytes -= (size_t) (*allocated - n) * elem;
        *array = p;
        *allocated = n;
}

static uint32_t hash_u64(uint64_t x) {
        x ^= x >> 33;
        x *= 0xff51afd7ed558ccdULL;
        x ^= x >> 33;
        x *= 0xc4ceb9fe1a85ec53ULL;
        x ^= x >> 33;
        return (uint32_t) x;
}

static uint32_t hash_bytes(uint32_t h, const void *p, size_t n) {
        const uint8_t *s = p;

        /* FNV-1a */
        for (size_t i = 0; i < n; i++) {
                h ^= s[i];
                h *= 16777619U;
        }
        return h;
}

static void copy_comm(char dst[PERF_COMM_MAX], const char *src) {
        size_t l = strnlen(src, PERF_COMM_MAX - 1);

        memcpy(dst, src, l);
        memset(dst + l, 0, PERF_COMM_MAX - l);
}

/* Read at most size-1 bytes of a small file; a longer (hostile) file is
 * cut, not refused. */
static int read_small_at(int dirfd, const char *path, char *buf, size_t size) {
        _cleanup_close_ int fd = -EBADF;
        size_t n = 0;

        fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        while (n < size - 1) {
                ssize_t k = read(fd, buf + n, size - 1 - n);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (k == 0)
                        break;
                n += (size_t) k;
        }
        buf[n] = 0;
        return (int) n;
}

/* /proc shows a workqueue worker as "kworker/0:1-events" (or "+events"
 * while it runs the work): the part after the name is the current work,
 * computed on each read, never announced by a COMM record. The name the
 * kernel's records use, and that stays true, is the part before. */
#define PF_WQ_WORKER 0x00000020U

static void comm_strip_kworker(char *comm) {
        if (startswith(comm, "kworker/"))
                comm[strcspn(comm, "+-")] = 0;
}

static void comm_clean(char *buf) {
        /* The kernel's comm file is the name and a newline. */
        buf[strcspn(buf, "\n")] = 0;
        buf[PERF_COMM_MAX - 1] = 0;
}

/* ---- images ---- */

static uint32_t image_hash(uint8_t kind, const char *path, const uint8_t *build_id, size_t build_id_size,
                           uint32_t maj, uint32_t min, uint64_t ino) {
        uint32_t h = hash_bytes(2166136261U ^ kind, path, strlen(path));

        if (build_id)
                return hash_bytes(h, build_id, build_id_size);
        return h ^ hash_u64(((uint64_t) maj << 52) ^ ((uint64_t) min << 32) ^ ino);
}

/* The interned image for this key, with a new reference. Known build-id:
 * the key is path + build-id (dev/inode filled in when some source knows
 * them). Unknown build-id: path + dev/inode. */
static Image *image_get(ProcMap *m, uint8_t kind, const char *path, const uint8_t *build_id,
                        size_t build_id_size, uint32_t maj, uint32_t min, uint64_t ino) {
        uint32_t h = image_hash(kind, path, build_id, build_id_size, maj, min, ino);
        size_t l = strlen(path), b;
        Image *i;

        b = h & (m->n_image_buckets - 1);
        for (i = m->image_buckets[b]; i; i = i->hash_next) {
                if (i->hash != h || i->kind != kind || !streq(i->path, path))
                        continue;
                if (build_id) {
                        if (!i->has_build_id || i->build_id_size != build_id_size ||
                            memcmp(i->build_id, build_id, build_id_size) != 0)
                                continue;
                        if (i->ino == 0 && ino != 0) {
                                i->maj = maj;
                                i->min = min;
                                i->ino = ino;
                        }
                } else if (i->has_build_id || i->maj != maj || i->min != min || i->ino != ino)
                        continue;
                i->refcount++;
                return i;
        }

        if (m->n_images >= m->n_image_buckets) {
                size_t nb = m->n_image_buckets * 2;
                Image **n = calloc(nb, sizeof(Image *));

                if (n) {
                        for (size_t k = 0; k < m->n_image_buckets; k++)
                                while (m->image_buckets[k]) {
                                        Image *x = m->image_buckets[k];
                                        m->image_buckets[k] = x->hash_next;
                                        x->hash_next = n[x->hash & (nb - 1)];
                                        n[x->hash & (nb - 1)] = x;
                                }
                        pm_free(m, m->image_buckets, m->n_image_buckets * sizeof(Image *));
                        m->bytes += nb * sizeof(Image *);
                        m->image_buckets = n;
                        m->n_image_buckets = nb;
                        b = h & (nb - 1);
                }
        }

        i = pm_malloc0(m, sizeof(Image) + l + 1);
        if (!i)
                return NULL;
        i->alloc_size = sizeof(Image) + l + 1;
        i->hash = h;
        i->refcount = 1;
        i->kind = kind;
        i->maj = maj;
        i->min = min;
        i->ino = ino;
        if (build_id) {
                i->has_build_id = true;
                i->build_id_size = (uint8_t) build_id_size;
                memcpy(i->build_id, build_id, build_id_size);
        }
        memcpy(i->path, path, l + 1);
        i->hash_next = m->image_buckets[b];
        m->image_buckets[b] = i;
        m->n_images++;
        return i;
}

static Image *image_ref(Image *i) {
        i->refcount++;
        return i;
}

static void image_unref(ProcMap *m, Image *i) {
        Image **pp;

        if (!i)
                return;
        assert(i->refcount > 0);
        if (--i->refcount > 0)
                return;
        for (pp = &m->image_buckets[i->hash & (m->n_image_buckets - 1)]; *pp; pp = &(*pp)->hash_next)
                if (*pp == i) {
                        *pp = i->hash_next;
                        break;
                }
        m->n_images--;
        pm_free(m, i, i->alloc_size);
}

/* ---- build-id cache and file reading ---- */

static BuildIdEntry *bid_find(ProcMap *m, uint32_t maj, uint32_t min, uint64_t ino) {
        uint32_t h = hash_u64(((uint64_t) maj << 52) ^ ((uint64_t) min << 32) ^ ino);

        for (BuildIdEntry *e = m->bid_buckets[h & (m->n_bid_buckets - 1)]; e; e = e->next)
                if (e->ino == ino && e->maj == maj && e->min == min)
                        return e;
        return NULL;
}

static void bid_clear(ProcMap *m) {
        for (size_t b = 0; b < m->n_bid_buckets; b++)
                while (m->bid_buckets[b]) {
                        BuildIdEntry *e = m->bid_buckets[b];
                        m->bid_buckets[b] = e->next;
                        pm_free(m, e, sizeof(BuildIdEntry));
                }
        m->n_bid = 0;
}

static void bid_add(ProcMap *m, uint32_t maj, uint32_t min, uint64_t ino, bool found, const uint8_t *id,
                    size_t size) {
        uint32_t h = hash_u64(((uint64_t) maj << 52) ^ ((uint64_t) min << 32) ^ ino);
        BuildIdEntry *e;

        /* Bounded: when full, start over. Hot files are back after one read. */
        if (m->n_bid >= BUILDID_CACHE_MAX)
                bid_clear(m);
        e = pm_malloc0(m, sizeof(BuildIdEntry));
        if (!e)
                return; /* only a cache */
        e->maj = maj;
        e->min = min;
        e->ino = ino;
        e->found = found;
        if (found) {
                e->size = (uint8_t) size;
                memcpy(e->id, id, size);
        }
        e->next = m->bid_buckets[h & (m->n_bid_buckets - 1)];
        m->bid_buckets[h & (m->n_bid_buckets - 1)] = e;
        m->n_bid++;
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

/*
 * Build-id of a file mapping of pid at [start, end). The device and inode
 * are in/out: 0 when unknown (MMAP records), then filled from the file found.
 * Returns 1 with the id, 0 when there is none or the file cannot be
 * reached (process gone, other mount namespace and no map_files).
 */
static int resolve_build_id(ProcMap *m, int pid_fd, uint32_t pid, uint64_t start, uint64_t end,
                            const char *path, uint32_t *maj, uint32_t *min, uint64_t *ino,
                            uint8_t id[PERF_BUILD_ID_MAX], uint8_t *ret_size) {
        _cleanup_close_ int own_pid_fd = -EBADF, fd = -EBADF;
        char buf[PATH_MAX_LEN + 64];
        bool known = *ino != 0;
        struct stat st;
        size_t size = 0;
        int r;

        if (known) {
                BuildIdEntry *e = bid_find(m, *maj, *min, *ino);
                if (e) {
                        if (!e->found)
                                return 0;
                        memcpy(id, e->id, e->size);
                        *ret_size = e->size;
                        return 1;
                }
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
                if (fd < 0 && path[0] == '/' && strlen(path) <= PATH_MAX_LEN) {
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
                BuildIdEntry *e = bid_find(m, *maj, *min, *ino);
                if (e) {
                        if (!e->found)
                                return 0;
                        memcpy(id, e->id, e->size);
                        *ret_size = e->size;
                        return 1;
                }
        }

        m->stats.buildid_reads++;
        r = elf_util_read_build_id_fd(fd, id, PERF_BUILD_ID_MAX, &size);
        if (r >= 0 && size > 0) {
                bid_add(m, *maj, *min, *ino, true, id, size);
                *ret_size = (uint8_t) size;
                return 1;
        }
        m->stats.buildid_read_failures++;
        /* Only definite answers are cached; I/O trouble may pass. */
        if (r >= 0 || r == -ENODATA || r == -EBADMSG || r == -E2BIG)
                bid_add(m, *maj, *min, *ino, false, NULL, 0);
        return 0;
}

static int classify_path(const char *path) {
        if (!path || !path[0] || streq(path, "//anon") || startswith(path, "[anon:") ||
            startswith(path, "[anon_shmem:") || streq(path, "[heap]") || streq(path, "[stack]"))
                return PROCMAP_IMAGE_ANON;
        if (streq(path, "[vdso]"))
                return PROCMAP_IMAGE_VDSO;
        if (path[0] == '/')
                return PROCMAP_IMAGE_FILE;
        /* [vsyscall], [uprobes], [vvar] and friends: not code a decoder
         * can take from a file, and not reported by the kernel either. */
        return -EINVAL;
}

/* ---- processes: hash, tombstones ---- */

static size_t pid_bucket(const ProcMap *m, uint32_t pid) {
        return hash_u64(pid) & (m->n_buckets - 1);
}

static Process *process_current(ProcMap *m, uint32_t pid) {
        for (Process *p = m->buckets[pid_bucket(m, pid)]; p; p = p->hash_next)
                if (p->pid == pid)
                        return p;
        return NULL;
}

static Process *process_at(ProcMap *m, uint32_t pid, uint64_t t) {
        for (Process *p = m->buckets[pid_bucket(m, pid)]; p; p = p->hash_next)
                if (p->pid == pid && p->start <= t && t < p->end)
                        return p;
        return NULL;
}

/* Tombstones are kept sorted by end time, so expiry stops at the first one
 * still inside the retention. Deaths come in time order (the manager
 * releases records sorted), bar rescans and late EXITs: the walk back from
 * the tail is almost always zero steps. */
static void tomb_link(ProcMap *m, Process *p) {
        Process *after = m->tomb_tail;

        while (after && after->end > p->end)
                after = after->tomb_prev;
        p->tomb_prev = after;
        p->tomb_next = after ? after->tomb_next : m->tomb_head;
        if (p->tomb_next)
                p->tomb_next->tomb_prev = p;
        else
                m->tomb_tail = p;
        if (after)
                after->tomb_next = p;
        else
                m->tomb_head = p;
}

static void tomb_unlink(ProcMap *m, Process *p) {
        if (p->tomb_prev)
                p->tomb_prev->tomb_next = p->tomb_next;
        else
                m->tomb_head = p->tomb_next;
        if (p->tomb_next)
                p->tomb_next->tomb_prev = p->tomb_prev;
        else
                m->tomb_tail = p->tomb_prev;
        p->tomb_prev = p->tomb_next = NULL;
}

static void process_destroy(ProcMap *m, Process *p) {
        bool dead = p->end != INF;

        FOREACH_ARRAY(x, p->maps, p->n_maps)
                image_unref(m, x->image);
        FOREACH_ARRAY(x, p->old_maps, p->n_old_maps)
                image_unref(m, x->image);
        if (dead) {
                m->threads_dead -= p->n_threads;
                m->mappings_dead -= p->n_maps;
        } else {
                m->threads_live -= p->n_threads;
                m->mappings_live -= p->n_maps;
        }
        m->threads_dead -= p->n_old_threads;
        m->mappings_dead -= p->n_old_maps;
        pm_free(m, p->threads, (size_t) p->allocated_threads * sizeof(Thread));
        pm_free(m, p->old_threads, (size_t) p->allocated_old_threads * sizeof(Thread));
        pm_free(m, p->maps, (size_t) p->allocated_maps * sizeof(Mapping));
        pm_free(m, p->old_maps, (size_t) p->allocated_old_maps * sizeof(Mapping));
        pm_free(m, p, sizeof(Process));
}

/* Unlink a tombstone from everything and free it. */
static void process_drop(ProcMap *m, Process *p) {
        Process **pp;

        assert(p->end != INF);
        for (pp = &m->buckets[pid_bucket(m, p->pid)]; *pp; pp = &(*pp)->hash_next)
                if (*pp == p) {
                        *pp = p->hash_next;
                        break;
                }
        tomb_unlink(m, p);
        m->n_processes--;
        m->n_dead--;
        process_destroy(m, p);
}

static void buckets_grow(ProcMap *m) {
        size_t nb = m->n_buckets * 2;
        Process **n = calloc(nb, sizeof(Process *));

        if (!n)
                return; /* longer chains, still correct */
        /* Walk each old chain from its tail end so that incarnations of one
         * pid keep their newest-first order in the new chain. */
        for (size_t b = 0; b < m->n_buckets; b++) {
                Process *stack = NULL;
                while (m->buckets[b]) {
                        Process *p = m->buckets[b];
                        m->buckets[b] = p->hash_next;
                        p->hash_next = stack;
                        stack = p;
                }
                while (stack) {
                        Process *p = stack;
                        size_t k = hash_u64(p->pid) & (nb - 1);
                        stack = p->hash_next;
                        p->hash_next = n[k];
                        n[k] = p;
                }
        }
        pm_free(m, m->buckets, m->n_buckets * sizeof(Process *));
        m->bytes += nb * sizeof(Process *);
        m->buckets = n;
        m->n_buckets = nb;
}

static int process_new(ProcMap *m, uint32_t pid, uint64_t start, uint32_t flags, Process **ret) {
        Process *p;
        size_t b;

        if (m->n_processes >= m->max_processes) {
                if (!m->tomb_head) {
                        m->stats.limit_refused++;
                        return -ENOBUFS;
                }
                /* The oldest tombstone goes first: it is the least likely to
                 * fall in any window still in a ring. */
                process_drop(m, m->tomb_head);
                m->stats.limit_evicted++;
        }
        if (m->n_processes >= m->n_buckets)
                buckets_grow(m);

        p = pm_malloc0(m, sizeof(Process));
        if (!p)
                return -ENOMEM;
        p->pid = pid;
        p->start = start;
        p->end = INF;
        p->old_min_end = INF;
        p->flags = flags;
        b = pid_bucket(m, pid);
        p->hash_next = m->buckets[b];
        m->buckets[b] = p;
        m->n_processes++;
        *ret = p;
        return 0;
}

/* ---- threads ---- */

static int64_t thread_find(const Process *p, uint32_t tid) {
        uint32_t lo = 0, hi = p->n_threads;

        while (lo < hi) {
                uint32_t mid = lo + (hi - lo) / 2;
                if (p->threads[mid].tid < tid)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo < p->n_threads && p->threads[lo].tid == tid ? (int64_t) lo : -1 - (int64_t) lo;
}

static void old_min_update(ProcMap *m, Process *p, uint64_t end) {
        if (end < p->old_min_end)
                p->old_min_end = end;
        if (end < m->old_min_end)
                m->old_min_end = end;
}

/* Room for one more thread span (current or old), dropping the oldest ended
 * span when at the limit. */
static int thread_room(ProcMap *m, Process *p) {
        if (p->n_threads + p->n_old_threads < m->max_threads)
                return 0;
        if (p->n_old_threads == 0) {
                m->stats.limit_refused++;
                return -ENOBUFS;
        }
        memmove(p->old_threads, p->old_threads + 1, (size_t) (p->n_old_threads - 1) * sizeof(Thread));
        p->n_old_threads--;
        m->threads_dead--;
        return 0;
}

/* Move the current span at idx to the old ones with end time t. Zero-length
 * spans (ended when they began) are simply forgotten. */
static int thread_retire(ProcMap *m, Process *p, uint32_t idx, uint64_t t, uint8_t flags) {
        Thread th = p->threads[idx];
        int r;

        th.time_end = MAX(t, th.time_start);
        th.flags |= flags;
        if (th.time_end > th.time_start) {
                r = array_reserve(m, (void **) &p->old_threads, &p->allocated_old_threads,
                                  (uint64_t) p->n_old_threads + 1, sizeof(Thread));
                if (r < 0)
                        return r;
                p->old_threads[p->n_old_threads++] = th;
                old_min_update(m, p, th.time_end);
                m->threads_dead++;
        }
        return 0;
}

static int thread_end(ProcMap *m, Process *p, uint32_t idx, uint64_t t, uint8_t flags) {
        int r;

        r = thread_retire(m, p, idx, t, flags);
        if (r < 0)
                return r;
        memmove(p->threads + idx, p->threads + idx + 1, (size_t) (p->n_threads - idx - 1) * sizeof(Thread));
        p->n_threads--;
        m->threads_live--;
        return 0;
}

static int thread_add(ProcMap *m, Process *p, uint32_t tid, const char *comm, uint64_t t, uint8_t flags) {
        int64_t i = thread_find(p, tid);
        char name[PERF_COMM_MAX];
        uint32_t pos;
        int r;

        assert(i < 0);
        /* comm may be a sibling's name inside p->threads, which moves. */
        copy_comm(name, comm);
        pos = (uint32_t) (-1 - i);
        r = thread_room(m, p);
        if (r < 0)
                return r;
        r = array_reserve(m, (void **) &p->threads, &p->allocated_threads, (uint64_t) p->n_threads + 1,
                          sizeof(Thread));
        if (r < 0)
                return r;
        memmove(p->threads + pos + 1, p->threads + pos, (size_t) (p->n_threads - pos) * sizeof(Thread));
        p->threads[pos] = (Thread){ .time_start = t, .time_end = INF, .tid = tid, .flags = flags };
        memcpy(p->threads[pos].comm, name, sizeof name);
        p->n_threads++;
        m->threads_live++;
        return 0;
}

static int thread_rename(ProcMap *m, Process *p, uint32_t idx, const char *comm, uint64_t t, uint8_t flags) {
        Thread *th = &p->threads[idx];
        int r;

        if (t > th->time_start) {
                r = thread_room(m, p);
                if (r < 0)
                        return r;
                r = thread_retire(m, p, idx, t, 0);
                if (r < 0)
                        return r;
                th = &p->threads[idx];
                th->time_start = t;
        }
        th->flags = flags;
        copy_comm(th->comm, comm);
        return 0;
}

/* The name a new task inherits: its creator's, else the leader's. */
static const char *process_comm_of(const Process *p, uint32_t tid) {
        int64_t i;

        if (!p)
                return "";
        i = thread_find(p, tid);
        if (i < 0)
                i = thread_find(p, p->pid);
        if (i < 0)
                return p->n_threads > 0 ? p->threads[0].comm : "";
        return p->threads[i].comm;
}

/* ---- mappings ---- */

static bool mapping_same(const Mapping *a, const Mapping *b) {
        return a->start == b->start && a->end == b->end && a->pgoff == b->pgoff && a->image == b->image &&
               a->prot == b->prot;
}

/* Does b continue a right where it ends, same file at the next offset? */
static bool mapping_continues(const Mapping *a, const Mapping *b) {
        return a->end == b->start && a->image == b->image && a->prot == b->prot && a->mflags == b->mflags &&
               (a->image->kind != PROCMAP_IMAGE_FILE || a->pgoff + (a->end - a->start) == b->pgoff);
}

/* First current mapping whose end is above addr. */
static uint32_t maps_lower_bound(const Process *p, uint64_t addr) {
        uint32_t lo = 0, hi = p->n_maps;

        while (lo < hi) {
                uint32_t mid = lo + (hi - lo) / 2;
                if (p->maps[mid].end <= addr)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

static int old_maps_append(ProcMap *m, Process *p, const Mapping *x) {
        int r;

        r = array_reserve(m, (void **) &p->old_maps, &p->allocated_old_maps, (uint64_t) p->n_old_maps + 1,
                          sizeof(Mapping));
        if (r < 0)
                return r;
        p->old_maps[p->n_old_maps++] = *x;
        old_min_update(m, p, x->time_end);
        m->mappings_dead++;
        return 0;
}

static void old_maps_drop_oldest(ProcMap *m, Process *p) {
        image_unref(m, p->old_maps[0].image);
        memmove(p->old_maps, p->old_maps + 1, (size_t) (p->n_old_maps - 1) * sizeof(Mapping));
        p->n_old_maps--;
        m->mappings_dead--;
}

/*
 * Replace [a, b) of the current mappings at time t by nm (NULL: just end
 * what is there). Overlapped parts end at t; the parts of an overlapped
 * mapping outside [a, b) stay current with their own start time. Takes
 * over nm's image reference in every case. Returns 1 on a change, 0 when
 * nothing changed or the record was stale.
 */
static int maps_replace(ProcMap *m, Process *p, uint64_t a, uint64_t b, uint64_t t, const Mapping *nm,
                        uint8_t end_flags, bool from_record) {
        uint32_t lo = maps_lower_bound(p, a), hi = lo, n_new, n_dead = 0;
        Mapping head = {}, tail = {};
        bool has_head = false, has_tail = false;
        uint64_t live_after, total_after;
        int r;

        while (hi < p->n_maps && p->maps[hi].start < b)
                hi++;

        if (nm && hi == lo + 1 && mapping_same(&p->maps[lo], nm)) {
                /* Seen again (scan, then the record that predates it): keep
                 * one mapping, valid since the earlier of the two. */
                if (t < p->maps[lo].time_start) {
                        p->maps[lo].time_start = t;
                        p->maps[lo].flags &= (uint8_t) ~SPAN_START_BY_SCAN;
                }
                image_unref(m, nm->image);
                return 0;
        }

        if (from_record && t < p->scan_time) {
                /* /proc, read later, showed the state after this record. */
                m->stats.records_stale++;
                if (nm)
                        image_unref(m, nm->image);
                return 0;
        }
        for (uint32_t i = lo; i < hi; i++) {
                if (from_record && (p->maps[i].flags & SPAN_START_BY_SCAN) && t < p->maps[i].time_start) {
                        m->stats.records_stale++;
                        if (nm)
                                image_unref(m, nm->image);
                        return 0;
                }
                if (MAX(t, p->maps[i].time_start) > p->maps[i].time_start)
                        n_dead++;
        }
        if (!nm && lo == hi)
                return 0;

        if (lo < hi && p->maps[lo].start < a) {
                head = p->maps[lo];
                head.end = a;
                has_head = true;
        }
        if (lo < hi && p->maps[hi - 1].end > b) {
                tail = p->maps[hi - 1];
                tail.pgoff += b - tail.start;
                tail.start = b;
                has_tail = true;
        }
        n_new = (uint32_t) has_head + (uint32_t) has_tail + (nm ? 1U : 0U);

        /* Limit: current + ended after this change. Ended mappings go first. */
        live_after = (uint64_t) p->n_maps - (hi - lo) + n_new;
        total_after = live_after + p->n_old_maps + n_dead;
        if (live_after + n_dead > m->max_mappings) {
                m->stats.limit_refused++;
                if (nm)
                        image_unref(m, nm->image);
                return -ENOBUFS;
        }
        while (total_after > m->max_mappings && p->n_old_maps > 0) {
                old_maps_drop_oldest(m, p);
                total_after--;
        }

        r = array_reserve(m, (void **) &p->old_maps, &p->allocated_old_maps,
                          (uint64_t) p->n_old_maps + n_dead, sizeof(Mapping));
        if (r >= 0)
                r = array_reserve(m, (void **) &p->maps, &p->allocated_maps, live_after, sizeof(Mapping));
        if (r < 0) {
                if (nm)
                        image_unref(m, nm->image);
                return r;
        }

        /* From here on nothing fails. */
        for (uint32_t i = lo; i < hi; i++) {
                Mapping d = p->maps[i];

                d.start = MAX(d.start, a);
                d.end = MIN(d.end, b);
                d.pgoff += d.start - p->maps[i].start;
                d.time_end = MAX(t, d.time_start);
                d.flags |= end_flags;
                if (d.time_end > d.time_start)
                        (void) old_maps_append(m, p, &d); /* reserved above */
                else
                        image_unref(m, d.image);
        }
        if (has_head)
                image_ref(head.image);
        if (has_tail)
                image_ref(tail.image);

        memmove(p->maps + lo + n_new, p->maps + hi, (size_t) (p->n_maps - hi) * sizeof(Mapping));
        {
                uint32_t k = lo;
                if (has_head)
                        p->maps[k++] = head;
                if (nm)
                        p->maps[k++] = *nm;
                if (has_tail)
                        p->maps[k++] = tail;
        }
        m->mappings_live = m->mappings_live - (hi - lo) + n_new;
        p->n_maps = (uint32_t) live_after;
        return 1;
}

/* exec: every current mapping ends at t — except those a later /proc scan
 * found, which are newer than the exec (the record came late). */
static int maps_end_all(ProcMap *m, Process *p, uint64_t t) {
        uint32_t j = 0;
        int r;

        if (p->n_maps == 0)
                return 0;
        r = array_reserve(m, (void **) &p->old_maps, &p->allocated_old_maps,
                          (uint64_t) p->n_old_maps + p->n_maps, sizeof(Mapping));
        if (r < 0)
                return r;
        for (uint32_t i = 0; i < p->n_maps; i++) {
                Mapping *x = &p->maps[i];

                if (x->time_start > t) {
                        p->maps[j++] = *x;
                        continue;
                }
                x->time_end = t;
                if (x->time_end > x->time_start)
                        (void) old_maps_append(m, p, x);
                else
                        image_unref(m, x->image);
        }
        m->mappings_live -= p->n_maps - j;
        p->n_maps = j;
        while (p->n_maps + p->n_old_maps > m->max_mappings && p->n_old_maps > 0)
                old_maps_drop_oldest(m, p);
        return 1;
}

/* The process ends at t: it becomes a tombstone whose current threads and
 * mappings end at t. */
static void process_end(ProcMap *m, Process *p, uint64_t t, bool by_scan) {
        uint8_t f = by_scan ? SPAN_END_BY_SCAN : 0;

        assert(p->end == INF);
        t = MAX(t, p->start);
        FOREACH_ARRAY(x, p->threads, p->n_threads) {
                x->time_end = MAX(t, x->time_start);
                x->flags |= f;
        }
        FOREACH_ARRAY(x, p->maps, p->n_maps) {
                x->time_end = MAX(t, x->time_start);
                x->flags |= f;
        }
        m->threads_live -= p->n_threads;
        m->threads_dead += p->n_threads;
        m->mappings_live -= p->n_maps;
        m->mappings_dead += p->n_maps;
        /* A tombstone never grows again: give back the slack. */
        array_fit(m, (void **) &p->threads, &p->allocated_threads, p->n_threads, sizeof(Thread));
        array_fit(m, (void **) &p->old_threads, &p->allocated_old_threads, p->n_old_threads, sizeof(Thread));
        array_fit(m, (void **) &p->maps, &p->allocated_maps, p->n_maps, sizeof(Mapping));
        array_fit(m, (void **) &p->old_maps, &p->allocated_old_maps, p->n_old_maps, sizeof(Mapping));
        p->end = t;
        if (by_scan)
                p->flags |= PROC_EXIT_BY_SCAN;
        m->n_dead++;
        tomb_link(m, p);
}

/* A rescan found p gone at its end time; the EXIT record now says when
 * exactly (thread tid, or the whole process for the leader). */
static int process_adopt_exit(ProcMap *m, Process *p, uint32_t tid, uint64_t t) {
        uint64_t old_end = p->end;
        int64_t i;

        if (!(p->flags & PROC_EXIT_BY_SCAN) || t < p->start)
                return 0;
        i = thread_find(p, tid);
        if (i >= 0 && (p->threads[i].flags & SPAN_END_BY_SCAN)) {
                p->threads[i].time_end = MAX(t, p->threads[i].time_start);
                p->threads[i].flags &= (uint8_t) ~SPAN_END_BY_SCAN;
        }
        if (tid != p->pid)
                return 1;
        FOREACH_ARRAY(x, p->threads, p->n_threads)
                if ((x->flags & SPAN_END_BY_SCAN) && x->time_end == old_end)
                        x->time_end = MAX(t, x->time_start);
        FOREACH_ARRAY(x, p->maps, p->n_maps)
                if ((x->flags & SPAN_END_BY_SCAN) && x->time_end == old_end) {
                        x->time_end = MAX(t, x->time_start);
                        x->flags &= (uint8_t) ~SPAN_END_BY_SCAN;
                }
        p->end = t;
        p->flags &= ~PROC_EXIT_BY_SCAN;
        /* Keep the tombstones sorted. */
        tomb_unlink(m, p);
        tomb_link(m, p);
        return 1;
}

/* A rescan ended p at its scan time because /proc no longer had it, but
 * /proc was read later than that: a record after that time shows the
 * process was still there. Undo the end; its EXIT record will come. */
static int process_reopen(ProcMap *m, Process *p) {
        uint32_t j = 0;
        int r;

        /* Threads whose own EXIT came meanwhile stay ended. */
        r = array_reserve(m, (void **) &p->old_threads, &p->allocated_old_threads,
                          (uint64_t) p->n_old_threads + p->n_threads, sizeof(Thread));
        if (r < 0)
                return r;
        for (uint32_t i = 0; i < p->n_threads; i++) {
                Thread *x = &p->threads[i];

                if (x->flags & SPAN_END_BY_SCAN) {
                        x->time_end = INF;
                        x->flags &= (uint8_t) ~SPAN_END_BY_SCAN;
                        p->threads[j++] = *x;
                } else if (x->time_end > x->time_start) {
                        p->old_threads[p->n_old_threads++] = *x;
                        old_min_update(m, p, x->time_end);
                } else
                        m->threads_dead--;
        }
        m->threads_dead -= j;
        m->threads_live += j;
        p->n_threads = j;
        FOREACH_ARRAY(x, p->maps, p->n_maps) {
                x->time_end = INF;
                x->flags &= (uint8_t) ~SPAN_END_BY_SCAN;
        }
        m->mappings_dead -= p->n_maps;
        m->mappings_live += p->n_maps;
        p->end = INF;
        p->flags &= ~PROC_EXIT_BY_SCAN;
        tomb_unlink(m, p);
        m->n_dead--;
        return 0;
}

/* The current incarnation of pid for a record at t; a record about a pid
 * we do not know starts one (its birth was before we looked). NULL with 0:
 * the record belongs to a tombstone (stale). */
static int process_for_record(ProcMap *m, uint32_t pid, uint64_t t, Process **ret) {
        Process *p = process_current(m, pid);

        *ret = NULL;
        if (p && p->end != INF && (p->flags & PROC_EXIT_BY_SCAN) && t >= p->end) {
                int r = process_reopen(m, p);
                if (r < 0)
                        return r;
        }
        if (p && p->end == INF) {
                if ((p->flags & PROC_FORKED) && t < p->start) {
                        /* Before its birth: an earlier incarnation's, late. */
                        m->stats.records_stale++;
                        return 0;
                }
                *ret = p;
                return 0;
        }
        if (p && t < p->end) {
                m->stats.records_stale++;
                return 0;
        }
        return process_new(m, pid, t, 0, ret);
}

static bool pid_valid(uint32_t pid) {
        /* 0 is the idle task, -1 the kernel's own mappings. */
        return pid != 0 && pid != UINT32_MAX;
}

/* ---- applying records ---- */

/* The name a new process starts with: fork() copies its creator's. But
 * kthreadd names its children inside copy_process() (kernel_thread() with
 * a name) and no COMM record follows, so for those the name is read from
 * /proc while the thread exists — kernel threads are created rarely. */
static const char *fork_comm(ProcMap *m, const Process *parent, uint32_t pid, uint32_t ppid, uint32_t ptid,
                             char buf[static 64]) {
        const char *inherited = process_comm_of(parent, ptid);
        char path[32];

        if (ppid != 2 || (parent && !streq(inherited, "kthreadd")))
                return inherited;
        (void) snprintf(path, sizeof path, "%" PRIu32 "/comm", pid);
        if (read_small_at(m->proc_fd, path, buf, 64) <= 0)
                return inherited;
        comm_clean(buf);
        comm_strip_kworker(buf);
        return buf;
}

static void exit_memo_put(ProcMap *m, uint32_t pid, uint32_t tid, uint64_t t) {
        m->exit_memo[hash_u64(tid) & (EXIT_MEMO_SIZE - 1)] = (ExitMemo){ .pid = pid, .tid = tid, .time = t };
}

/* Did this task exit at or after t (so a FORK at t is late)? */
static bool exit_memo_get(ProcMap *m, uint32_t pid, uint32_t tid, uint64_t t, uint64_t *ret) {
        const ExitMemo *e = &m->exit_memo[hash_u64(tid) & (EXIT_MEMO_SIZE - 1)];

        if (e->tid != tid || e->pid != pid || e->time < t)
                return false;
        *ret = e->time;
        return true;
}

/* A thread's FORK after its EXIT: it lived in [t, te). Its name may have
 * made a span already (a COMM came first too); that one starts earlier now. */
static int apply_late_thread_fork(ProcMap *m, Process *p, uint32_t tid, uint32_t ptid, uint64_t t,
                                  uint64_t te) {
        int64_t i;
        int k;

        FOREACH_ARRAY(x, p->old_threads, p->n_old_threads)
                if (x->tid == tid && x->time_end == te) {
                        x->time_start = MIN(x->time_start, t);
                        return 1;
                }
        k = thread_add(m, p, tid, process_comm_of(p, ptid), t, 0);
        if (k < 0)
                return k;
        i = thread_find(p, tid);
        assert(i >= 0);
        k = thread_end(m, p, (uint32_t) i, te, 0);
        return k < 0 ? k : 1;
}

static int apply_fork(ProcMap *m, const PerfRecord *r, uint64_t t) {
        uint32_t pid = r->fork.pid, ppid = r->fork.ppid, tid = r->fork.tid, ptid = r->fork.ptid;
        Process *p, *parent;
        char name[64];
        uint64_t te;
        int k;

        if (!pid_valid(pid) || !pid_valid(tid))
                return 0;

        if (tid != pid) {
                int64_t i;

                k = process_for_record(m, pid, t, &p);
                if (!p)
                        return k;
                i = thread_find(p, tid);
                if (i >= 0) {
                        if (t < p->threads[i].time_start)
                                p->threads[i].time_start = t;
                        return 0;
                }
                if (t < p->scan_time) {
                        m->stats.records_stale++;
                        return 0;
                }
                if (exit_memo_get(m, pid, tid, t, &te))
                        return apply_late_thread_fork(m, p, tid, ptid, t, te);
                k = thread_add(m, p, tid, process_comm_of(p, ptid), t, 0);
                return k < 0 ? k : 1;
        }

        p = process_current(m, pid);
        if (p && p->end != INF && t < p->end) {
                if (exit_memo_get(m, pid, pid, t, &te) && te == p->end && !(p->flags & PROC_FORKED)) {
                        /* Late: its other records made it, its EXIT ended it. */
                        p->start = MIN(p->start, t);
                        p->flags |= PROC_FORKED;
                        p->ppid = ppid;
                        return 1;
                }
                m->stats.records_stale++;
                return 0;
        }
        if (p && p->end == INF) {
                if (!(p->flags & PROC_FORKED)) {
                        /* Known from /proc or a stray record, without its birth:
                         * this is it, whether the scan saw the process a little
                         * before or after the record's time. */
                        p->flags |= PROC_FORKED;
                        p->start = t;
                        p->ppid = ppid;
                        return 1;
                }
                /* Its EXIT was lost: the old incarnation ended when the pid was reused. */
                process_end(m, p, t, false);
        }

        parent = process_current(m, ppid);
        if (parent && parent->end != INF)
                parent = NULL;
        k = process_new(m, pid, t, PROC_FORKED, &p);
        if (k < 0)
                return k;
        p->ppid = ppid;
        k = thread_add(m, p, tid, fork_comm(m, parent, pid, ppid, ptid, name), t, 0);
        if (k < 0)
                return k;
        if (parent && parent->n_maps > 0) {
                /* fork() copies the address space. */
                k = array_reserve(m, (void **) &p->maps, &p->allocated_maps, parent->n_maps,
                                  sizeof(Mapping));
                if (k < 0)
                        return k;
                FOREACH_ARRAY(x, parent->maps, parent->n_maps) {
                        Mapping c = *x;
                        c.time_start = t;
                        c.time_end = INF;
                        c.flags = 0;
                        image_ref(c.image);
                        p->maps[p->n_maps++] = c;
                }
                m->mappings_live += p->n_maps;
        }
        /* Its EXIT came first (a pid we did not know then). */
        if (exit_memo_get(m, pid, pid, t, &te))
                process_end(m, p, te, false);
        return 1;
}

static int apply_exit(ProcMap *m, const PerfRecord *r, uint64_t t) {
        uint32_t pid = r->exit.pid, tid = r->exit.tid;
        Process *p = process_current(m, pid);
        int64_t i;
        int k;

        if (!pid_valid(pid) || !pid_valid(tid))
                return 0;
        exit_memo_put(m, pid, tid, t);
        if (!p)
                return 0;
        if (p->end != INF)
                return process_adopt_exit(m, p, tid, t);
        if (t < p->start) {
                /* An earlier incarnation's; /proc already showed this one. */
                m->stats.records_stale++;
                return 0;
        }
        i = thread_find(p, tid);
        if (i >= 0) {
                k = thread_end(m, p, (uint32_t) i, t, 0);
                if (k < 0)
                        return k;
        } else if (tid != pid)
                return 0;
        if (p->n_threads == 0 || (i < 0 && tid == pid))
                process_end(m, p, t, false);
        return 1;
}

static int apply_comm(ProcMap *m, const PerfRecord *r, uint64_t t) {
        uint32_t pid = r->comm.pid, tid = r->comm.tid;
        const char *comm = r->comm.comm;
        bool changed = false;
        Process *p;
        int64_t i;
        int k;

        if (!pid_valid(pid) || !pid_valid(tid))
                return 0;
        k = process_for_record(m, pid, t, &p);
        if (!p)
                return k;

        if (r->comm.exec) {
                k = maps_end_all(m, p, t);
                if (k < 0)
                        return k;
                /* de_thread(): the exec'ing thread is alone, under the leader's tid. */
                for (uint32_t j = p->n_threads; j > 0; j--)
                        if (p->threads[j - 1].tid != tid && p->threads[j - 1].time_start <= t) {
                                k = thread_end(m, p, j - 1, t, 0);
                                if (k < 0)
                                        return k;
                        }
                changed = true;
        }

        i = thread_find(p, tid);
        if (i < 0) {
                if (t < p->scan_time) {
                        /* A thread gone by the time /proc was read. */
                        m->stats.records_stale++;
                        return changed;
                }
                k = thread_add(m, p, tid, comm, t, 0);
                return k < 0 ? k : 1;
        }
        if (strncmp(p->threads[i].comm, comm, PERF_COMM_MAX - 1) == 0) {
                if (t < p->threads[i].time_start)
                        p->threads[i].time_start = t;
                return changed;
        }
        if (t < p->threads[i].time_start && (p->threads[i].flags & SPAN_START_BY_SCAN)) {
                /* /proc, read later, showed another name. */
                m->stats.records_stale++;
                return changed;
        }
        /* Earlier than the span began by a record: the CPUs' clocks differ
         * a little; the rename happened then. */
        k = thread_rename(m, p, (uint32_t) i, comm, t, 0);
        return k < 0 ? k : 1;
}

static int apply_mmap(ProcMap *m, const PerfRecord *r, uint64_t t) {
        uint32_t pid, maj = 0, min = 0, prot, mflags;
        uint64_t addr, len, pgoff, ino = 0;
        uint8_t id[PERF_BUILD_ID_MAX];
        uint8_t id_size = 0;
        const char *filename;
        bool exec, has_id = false;
        uint16_t cpumode = r->misc & PERF_RECORD_MISC_CPUMODE_MASK;
        Process *p;
        Image *img;
        int kind, k;

        if (cpumode == PERF_RECORD_MISC_KERNEL || cpumode == PERF_RECORD_MISC_GUEST_KERNEL)
                return 0;

        if (r->type == PERF_RECORD_MMAP) {
                pid = r->mmap.pid;
                addr = r->mmap.addr;
                len = r->mmap.len;
                pgoff = r->mmap.pgoff;
                filename = r->mmap.filename;
                exec = !(r->misc & PERF_RECORD_MISC_MMAP_DATA);
                prot = exec ? PROT_READ | PROT_EXEC : PROT_READ;
                mflags = MAP_PRIVATE;
        } else {
                pid = r->mmap2.pid;
                addr = r->mmap2.addr;
                len = r->mmap2.len;
                pgoff = r->mmap2.pgoff;
                filename = r->mmap2.filename;
                prot = r->mmap2.prot;
                mflags = r->mmap2.flags;
                exec = (prot & PROT_EXEC) || (prot == 0 && !(r->misc & PERF_RECORD_MISC_MMAP_DATA));
                if (prot == 0 && exec)
                        prot = PROT_READ | PROT_EXEC;
                if (r->mmap2.has_build_id) {
                        has_id = r->mmap2.build_id_size > 0 && r->mmap2.build_id_size <= PERF_BUILD_ID_MAX;
                        id_size = r->mmap2.build_id_size;
                        if (has_id)
                                memcpy(id, r->mmap2.build_id, id_size);
                } else {
                        maj = r->mmap2.maj;
                        min = r->mmap2.min;
                        ino = r->mmap2.ino;
                }
        }
        if (!pid_valid(pid) || len == 0 || addr + len < addr)
                return 0;

        kind = classify_path(filename);
        if (exec && (kind < 0 || strlen(filename) > PATH_MAX_LEN))
                return 0;

        k = process_for_record(m, pid, t, &p);
        if (!p)
                return k;
        if (!exec)
                return maps_replace(m, p, addr, addr + len, t, NULL, 0, true);

        if (kind == PROCMAP_IMAGE_FILE && !has_id)
                has_id = resolve_build_id(m, -EBADF, pid, addr, addr + len, filename, &maj, &min, &ino, id,
                                          &id_size) > 0;
        if (kind == PROCMAP_IMAGE_ANON && !filename[0])
                filename = "//anon";
        img = image_get(m, (uint8_t) kind, filename, has_id ? id : NULL, id_size, maj, min, ino);
        if (!img)
                return -ENOMEM;

        Mapping nm = {
                .start = addr,
                .end = addr + len,
                .pgoff = pgoff,
                .time_start = t,
                .time_end = INF,
                .image = img,
                .mflags = mflags,
                .prot = (uint8_t) prot,
        };
        return maps_replace(m, p, addr, addr + len, t, &nm, 0, true);
}

int procmap_apply(ProcMap *m, const PerfRecord *r) {
        uint64_t t;
        int k;

        assert(m);
        assert(r);

        if (!r->has_sample_id || !(r->sid.sample_type & PERF_SAMPLE_TIME)) {
                m->stats.records_ignored++;
                return 0;
        }
        t = r->sid.time;

        switch (r->type) {
        case PERF_RECORD_FORK:
                k = apply_fork(m, r, t);
                break;
        case PERF_RECORD_EXIT:
                k = apply_exit(m, r, t);
                break;
        case PERF_RECORD_COMM:
                k = apply_comm(m, r, t);
                break;
        case PERF_RECORD_MMAP:
        case PERF_RECORD_MMAP2:
                k = apply_mmap(m, r, t);
                break;
        default:
                m->stats.records_ignored++;
                return 0;
        }
        if (k > 0)
                m->stats.records_applied++;
        else if (k == 0)
                m->stats.records_ignored++;

        if (t > m->latest_time)
                m->latest_time = t;
        /* Automatic expiry, amortized: every eighth of the retention, so
         * at most 1/8 more than the retention is ever kept. */
        if (m->retention != INF && m->latest_time > m->retention) {
                uint64_t horizon = m->latest_time - m->retention;
                if (horizon >= m->last_auto_horizon + m->retention / 8 || m->last_auto_horizon == 0) {
                        procmap_expire(m, horizon);
                        m->last_auto_horizon = horizon;
                }
        }
        return k;
}

/* ---- expiry ---- */

static void process_compact(ProcMap *m, Process *p, uint64_t horizon) {
        uint32_t j = 0;
        uint64_t min_end = INF;

        for (uint32_t i = 0; i < p->n_old_threads; i++) {
                if (p->old_threads[i].time_end < horizon) {
                        m->threads_dead--;
                        continue;
                }
                min_end = MIN(min_end, p->old_threads[i].time_end);
                p->old_threads[j++] = p->old_threads[i];
        }
        p->n_old_threads = j;
        array_shrink(m, (void **) &p->old_threads, &p->allocated_old_threads, j, sizeof(Thread));

        j = 0;
        for (uint32_t i = 0; i < p->n_old_maps; i++) {
                if (p->old_maps[i].time_end < horizon) {
                        image_unref(m, p->old_maps[i].image);
                        m->mappings_dead--;
                        continue;
                }
                min_end = MIN(min_end, p->old_maps[i].time_end);
                p->old_maps[j++] = p->old_maps[i];
        }
        p->n_old_maps = j;
        array_shrink(m, (void **) &p->old_maps, &p->allocated_old_maps, j, sizeof(Mapping));
        p->old_min_end = min_end;
}

void procmap_expire(ProcMap *m, uint64_t horizon) {
        assert(m);

        /* Tombstones are sorted by end: only the expired ones are visited. */
        while (m->tomb_head && m->tomb_head->end < horizon) {
                process_drop(m, m->tomb_head);
                m->stats.expired_processes++;
        }

        /* Ended spans of live processes: walking every process costs
         * milliseconds with many of them, so only when one is due. */
        if (m->old_min_end >= horizon)
                return;
        m->old_min_end = INF;
        for (size_t b = 0; b < m->n_buckets; b++)
                for (Process *p = m->buckets[b]; p; p = p->hash_next) {
                        if (p->old_min_end < horizon)
                                process_compact(m, p, horizon);
                        m->old_min_end = MIN(m->old_min_end, p->old_min_end);
                }
}

/* ---- /proc ---- */

typedef struct ScanThread {
        uint32_t tid;
        char comm[PERF_COMM_MAX];
} ScanThread;

typedef struct ScanMap {
        uint64_t start, end, pgoff, ino;
        uint32_t maj, min;
        uint32_t mflags;
        uint8_t prot;
        int kind;
        size_t path; /* offset in Scan.paths */
        bool matched;
} ScanMap;

typedef struct Scan {
        ScanThread *threads;
        uint32_t n_threads, allocated_threads;
        ScanMap *maps;
        uint32_t n_maps, allocated_maps;
        Buffer paths;
        char line[MAPS_LINE_MAX + 2];
} Scan;

static bool parse_u32_dec(const char *s, uint32_t *ret) {
        uint64_t v = 0;

        if (!*s)
                return false;
        for (; *s; s++) {
                if (*s < '0' || *s > '9')
                        return false;
                v = v * 10 + (uint64_t) (*s - '0');
                if (v > UINT32_MAX)
                        return false;
        }
        *ret = (uint32_t) v;
        return true;
}

/* Hex (at most 16 digits) then the expected terminator. */
static const char *parse_hex(const char *s, char term, uint64_t *ret) {
        uint64_t v = 0;
        unsigned n = 0;

        for (;; s++, n++) {
                int d;
                if (*s >= '0' && *s <= '9')
                        d = *s - '0';
                else if (*s >= 'a' && *s <= 'f')
                        d = *s - 'a' + 10;
                else if (*s >= 'A' && *s <= 'F')
                        d = *s - 'A' + 10;
                else
                        break;
                if (n >= 16)
                        return NULL;
                v = (v << 4) | (uint64_t) d;
        }
        if (n == 0 || *s != term)
                return NULL;
        *ret = v;
        return s + 1;
}

/*
 * One line of /proc/PID/maps, without its newline:
 *   "start-end perms offset maj:min inode [path]"
 * Returns 1 for an executable mapping we keep (*ret, *ret_path), 0 for
 * one we skip, -EBADMSG for garbage.
 */
static int parse_maps_line(char *line, ScanMap *ret, const char **ret_path) {
        uint64_t start, end, pgoff, maj, min, ino = 0;
        const char *s = line, *perms;
        unsigned n = 0;
        int kind;

        s = parse_hex(s, '-', &start);
        if (s)
                s = parse_hex(s, ' ', &end);
        if (!s || start >= end)
                return -EBADMSG;
        perms = s;
        if (strnlen(perms, 5) < 5 || perms[4] != ' ' || !strchr("r-", perms[0]) || !strchr("w-", perms[1]) ||
            !strchr("x-", perms[2]) || !strchr("ps", perms[3]))
                return -EBADMSG;
        s = parse_hex(perms + 5, ' ', &pgoff);
        if (s)
                s = parse_hex(s, ':', &maj);
        if (s)
                s = parse_hex(s, ' ', &min);
        if (!s || maj > UINT32_MAX || min > UINT32_MAX)
                return -EBADMSG;
        for (; *s >= '0' && *s <= '9'; s++, n++) {
                if (n >= 20 || ino > (UINT64_MAX - 9) / 10)
                        return -EBADMSG;
                ino = ino * 10 + (uint64_t) (*s - '0');
        }
        if (n == 0 || (*s != ' ' && *s != 0))
                return -EBADMSG;
        while (*s == ' ')
                s++;

        if (perms[2] != 'x')
                return 0;
        kind = classify_path(s);
        if (kind < 0)
                return 0;
        if (kind == PROCMAP_IMAGE_FILE && (ino == 0 || strlen(s) > PATH_MAX_LEN))
                return 0;
        if (kind == PROCMAP_IMAGE_ANON && !s[0])
                s = "//anon";

        *ret = (ScanMap){
                .start = start,
                .end = end,
                .pgoff = pgoff,
                .ino = kind == PROCMAP_IMAGE_FILE ? ino : 0,
                .maj = kind == PROCMAP_IMAGE_FILE ? (uint32_t) maj : 0,
                .min = kind == PROCMAP_IMAGE_FILE ? (uint32_t) min : 0,
                .mflags = perms[3] == 's' ? MAP_SHARED : MAP_PRIVATE,
                .prot = (uint8_t) ((perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) |
                                   PROT_EXEC),
                .kind = kind,
        };
        *ret_path = s;
        return 1;
}

static int scan_map_cmp(const void *a, const void *b) {
        const ScanMap *x = a, *y = b;
        return x->start < y->start ? -1 : x->start > y->start;
}

static int scan_read_maps(ProcMap *m, Scan *s, int pid_fd) {
        _cleanup_fclose_ FILE *f = NULL;
        int fd;

        s->n_maps = 0;
        buffer_clear(&s->paths);

        fd = openat(pid_fd, "maps", O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        f = fdopen(fd, "re");
        if (!f) {
                safe_close(fd);
                return -ENOMEM;
        }

        while (fgets(s->line, sizeof s->line, f)) {
                size_t l = strlen(s->line);
                const char *path;
                ScanMap sm;
                int r;

                if (l > 0 && s->line[l - 1] == '\n')
                        s->line[--l] = 0;
                else if (!feof(f)) {
                        /* Longer than any path we could use: skip the rest. */
                        int c;
                        while ((c = fgetc(f)) != EOF && c != '\n')
                                ;
                        continue;
                }
                r = parse_maps_line(s->line, &sm, &path);
                if (r <= 0)
                        continue; /* garbage is skipped, not fatal */
                if (s->n_maps >= m->max_mappings)
                        break;
                sm.path = s->paths.size;
                r = buffer_append(&s->paths, path, strlen(path) + 1);
                if (r < 0)
                        return r;
                r = array_reserve(m, (void **) &s->maps, &s->allocated_maps, (uint64_t) s->n_maps + 1,
                                  sizeof(ScanMap));
                if (r < 0)
                        return r;
                s->maps[s->n_maps++] = sm;
        }
        if (ferror(f))
                return errno > 0 ? -errno : -EIO;
        /* The kernel lists them by address; a fake or hostile file may not. */
        if (s->n_maps > 1)
                qsort(s->maps, s->n_maps, sizeof(ScanMap), scan_map_cmp);
        return 0;
}

static int scan_thread_cmp(const void *a, const void *b) {
        uint32_t x = ((const ScanThread *) a)->tid, y = ((const ScanThread *) b)->tid;
        return x < y ? -1 : x > y;
}

static int scan_read_threads(ProcMap *m, Scan *s, int pid_fd) {
        _cleanup_close_ int task_fd = -EBADF;
        DIR *d;
        struct dirent *de;
        int r = 0;

        s->n_threads = 0;
        task_fd = openat(pid_fd, "task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (task_fd < 0)
                return -errno;
        d = fdopendir(task_fd);
        if (!d)
                return -errno;
        task_fd = -EBADF; /* owned by d now */

        while ((de = readdir(d))) {
                char path[300], comm[64];
                uint32_t tid;

                if (!parse_u32_dec(de->d_name, &tid) || !pid_valid(tid))
                        continue;
                if (s->n_threads >= m->max_threads)
                        break;
                (void) snprintf(path, sizeof path, "%s/comm", de->d_name);
                if (read_small_at(dirfd(d), path, comm, sizeof comm) < 0)
                        continue; /* the thread just exited */
                comm_clean(comm);
                r = array_reserve(m, (void **) &s->threads, &s->allocated_threads,
                                  (uint64_t) s->n_threads + 1, sizeof(ScanThread));
                if (r < 0)
                        break;
                s->threads[s->n_threads].tid = tid;
                copy_comm(s->threads[s->n_threads].comm, comm);
                s->n_threads++;
        }
        closedir(d);
        if (r < 0)
                return r;
        if (s->n_threads > 1)
                qsort(s->threads, s->n_threads, sizeof(ScanThread), scan_thread_cmp);
        return 0;
}

/* ppid and start time (clock ticks since boot) from /proc/PID/stat. The
 * name in parentheses may hold anything, so fields start after the last ')'. */
static int scan_read_stat(int pid_fd, char *ret_state, uint32_t *ret_ppid, uint32_t *ret_flags,
                          uint64_t *ret_starttime) {
        char buf[1024], *s, *save = NULL, *tok, state = 0;
        uint64_t starttime = 0;
        uint32_t ppid = 0, flags = 0;
        int r;

        r = read_small_at(pid_fd, "stat", buf, sizeof buf);
        if (r < 0)
                return r;
        s = strrchr(buf, ')');
        if (!s)
                return -EBADMSG;
        s++;
        /* Fields 3 (state), 4 (ppid), ..., 9 (flags), ..., 22 (starttime). */
        tok = strtok_r(s, " ", &save);
        for (unsigned field = 3; tok && field <= 22; field++, tok = strtok_r(NULL, " ", &save)) {
                if (field == 3)
                        state = tok[0];
                if (field == 4 && !parse_u32_dec(tok, &ppid))
                        return -EBADMSG;
                if (field == 9 && !parse_u32_dec(tok, &flags))
                        flags = 0;
                if (field == 22) {
                        char *end;
                        errno = 0;
                        starttime = strtoull(tok, &end, 10);
                        if (errno != 0 || *end)
                                starttime = 0;
                }
        }
        *ret_state = state;
        *ret_ppid = ppid;
        *ret_flags = flags;
        *ret_starttime = starttime;
        return 0;
}

/* Do the current mappings starting at index i cover sm exactly, as one
 * mapping or as several pieces of the same file (VMAs the kernel merged, or
 * pieces we split)? Returns how many, 0 if not. */
static uint32_t maps_cover(const Process *p, uint32_t i, const ScanMap *sm, const char *path) {
        uint64_t at = sm->start, pgoff = sm->pgoff;
        uint32_t n = 0;

        for (; i < p->n_maps && at < sm->end; i++, n++) {
                const Mapping *x = &p->maps[i];
                const Image *img = x->image;

                if (x->start != at || x->end > sm->end || x->prot != sm->prot || img->kind != sm->kind ||
                    !streq(img->path, path))
                        return 0;
                if (sm->kind == PROCMAP_IMAGE_FILE &&
                    (x->pgoff != pgoff ||
                     (img->ino != 0 && (img->ino != sm->ino || img->maj != sm->maj || img->min != sm->min))))
                        return 0;
                pgoff += x->end - x->start;
                at = x->end;
        }
        return at == sm->end ? n : 0;
}

static int scan_reconcile_maps(ProcMap *m, Scan *s, Process *p, int pid_fd, uint64_t time,
                               unsigned *changes) {
        uint32_t i = 0, j = 0;
        int r;

        /* Walk both sorted lists; current mappings not covered by what /proc
         * shows end now. */
        FOREACH_ARRAY(sm, s->maps, s->n_maps)
                sm->matched = false;
        while (i < p->n_maps) {
                const Mapping *x = &p->maps[i];
                uint32_t n;

                while (j < s->n_maps && s->maps[j].end <= x->start)
                        j++;
                n = j < s->n_maps && s->maps[j].start == x->start
                            ? maps_cover(p, i, &s->maps[j], (const char *) s->paths.data + s->maps[j].path)
                            : 0;
                if (n > 0) {
                        s->maps[j].matched = true;
                        i += n;
                        continue;
                }
                r = maps_replace(m, p, x->start, x->end, time, NULL, SPAN_END_BY_SCAN, false);
                if (r < 0)
                        return r;
                (*changes)++;
                /* maps_replace removed index i */
        }

        FOREACH_ARRAY(sm, s->maps, s->n_maps) {
                const char *path = (const char *) s->paths.data + sm->path;
                uint8_t id[PERF_BUILD_ID_MAX], id_size = 0;
                uint32_t maj = sm->maj, min = sm->min;
                uint64_t ino = sm->ino;
                bool has_id = false;
                Image *img;

                if (sm->matched)
                        continue;
                if (sm->kind == PROCMAP_IMAGE_FILE)
                        has_id = resolve_build_id(m, pid_fd, p->pid, sm->start, sm->end, path, &maj, &min,
                                                  &ino, id, &id_size) > 0;
                img = image_get(m, (uint8_t) sm->kind, path, has_id ? id : NULL, id_size, maj, min, ino);
                if (!img)
                        return -ENOMEM;
                Mapping nm = {
                        .start = sm->start,
                        .end = sm->end,
                        .pgoff = sm->kind == PROCMAP_IMAGE_FILE ? sm->pgoff : 0,
                        .time_start = time,
                        .time_end = INF,
                        .image = img,
                        .mflags = sm->mflags,
                        .prot = sm->prot,
                        .flags = SPAN_START_BY_SCAN,
                };
                r = maps_replace(m, p, sm->start, sm->end, time, &nm, SPAN_END_BY_SCAN, false);
                if (r == -ENOBUFS)
                        continue;
                if (r < 0)
                        return r;
                (*changes)++;
        }
        return 0;
}

static int scan_reconcile_threads(ProcMap *m, Scan *s, Process *p, uint64_t time, unsigned *changes) {
        int r;

        for (uint32_t i = p->n_threads; i > 0; i--) {
                ScanThread key = { .tid = p->threads[i - 1].tid };
                if (bsearch(&key, s->threads, s->n_threads, sizeof(ScanThread), scan_thread_cmp))
                        continue;
                r = thread_end(m, p, i - 1, time, SPAN_END_BY_SCAN);
                if (r < 0)
                        return r;
                (*changes)++;
        }
        FOREACH_ARRAY(st, s->threads, s->n_threads) {
                int64_t i = thread_find(p, st->tid);

                if (i < 0)
                        r = thread_add(m, p, st->tid, st->comm, time, SPAN_START_BY_SCAN);
                else if (!streq(p->threads[i].comm, st->comm))
                        r = thread_rename(m, p, (uint32_t) i, st->comm, MAX(time, p->threads[i].time_start),
                                          SPAN_START_BY_SCAN);
                else
                        continue;
                if (r == -ENOBUFS)
                        continue;
                if (r < 0)
                        return r;
                (*changes)++;
        }
        return 0;
}

static int scan_one(ProcMap *m, Scan *s, int pid_fd, uint32_t pid, uint64_t time, unsigned *changes) {
        uint64_t starttime = 0;
        uint32_t ppid = 0, pflags = 0;
        char state = 0;
        bool maps_ok;
        Process *p;
        int r;

        r = scan_read_stat(pid_fd, &state, &ppid, &pflags, &starttime);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return 0; /* gone (or not a process): not marked, ends below if known */
        r = scan_read_threads(m, s, pid_fd);
        if (r == -ENOMEM)
                return r;
        if (r < 0 || s->n_threads == 0)
                return 0;
        /* A zombie has exited (its EXIT record is out), it only waits to be
         * reaped; unless just its leader has, with other threads running. */
        if ((state == 'Z' || state == 'X') && s->n_threads == 1)
                return 0;
        if (pflags & PF_WQ_WORKER)
                FOREACH_ARRAY(st, s->threads, s->n_threads)
                        comm_strip_kworker(st->comm);
        r = scan_read_maps(m, s, pid_fd);
        if (r == -ENOMEM)
                return r;
        if (r == -ENOENT || r == -ESRCH)
                return 0;
        /* Unreadable (not ours to read) is not empty: keep what we know. */
        maps_ok = r >= 0;

        p = process_current(m, pid);
        if (p && p->end == INF && p->proc_starttime != 0 && starttime != 0 &&
            p->proc_starttime != starttime) {
                /* The pid was reused while we were not looking. */
                process_end(m, p, time, true);
                (*changes)++;
        } else if (p && p->end != INF && (p->flags & PROC_EXIT_BY_SCAN) && p->proc_starttime != 0 &&
                   p->proc_starttime == starttime) {
                /* An earlier scan missed it (it could not read it then). */
                r = process_reopen(m, p);
                if (r < 0)
                        return r;
                (*changes)++;
        }
        if (!p || p->end != INF) {
                r = process_new(m, pid, time, PROC_FROM_SCAN, &p);
                if (r == -ENOBUFS)
                        return 0;
                if (r < 0)
                        return r;
                p->ppid = ppid;
                (*changes)++;
        }
        p->scan_gen = m->scan_gen;
        p->scan_time = MAX(p->scan_time, time);
        if (!(p->flags & PROC_FORKED))
                p->ppid = ppid;
        if (starttime != 0)
                p->proc_starttime = starttime;

        r = scan_reconcile_threads(m, s, p, time, changes);
        if (r < 0)
                return r;
        if (maps_ok) {
                r = scan_reconcile_maps(m, s, p, pid_fd, time, changes);
                if (r < 0)
                        return r;
        }
        return 0;
}

int procmap_scan_proc(ProcMap *m, uint64_t time) {
        _cleanup_close_ int dfd = -EBADF;
        unsigned changes = 0;
        Scan s = {};
        DIR *d;
        struct dirent *de;
        int r = 0;

        assert(m);

        dfd = openat(m->proc_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return -errno;
        d = fdopendir(dfd);
        if (!d)
                return -errno;
        dfd = -EBADF;

        m->scan_gen++;
        while ((de = readdir(d))) {
                _cleanup_close_ int pid_fd = -EBADF;
                uint32_t pid;

                if (!parse_u32_dec(de->d_name, &pid) || !pid_valid(pid))
                        continue;
                pid_fd = openat(dirfd(d), de->d_name, O_PATH | O_DIRECTORY | O_CLOEXEC);
                if (pid_fd < 0)
                        continue;
                r = scan_one(m, &s, pid_fd, pid, time, &changes);
                if (r < 0)
                        break;
        }
        closedir(d);

        if (r >= 0) {
                /* Whatever is current and was not seen has exited. */
                for (size_t b = 0; b < m->n_buckets; b++)
                        for (Process *p = m->buckets[b]; p; p = p->hash_next)
                                if (p->end == INF && p->scan_gen != m->scan_gen) {
                                        process_end(m, p, time, true);
                                        changes++;
                                }
        }

        pm_free(m, s.threads, (size_t) s.allocated_threads * sizeof(ScanThread));
        pm_free(m, s.maps, (size_t) s.allocated_maps * sizeof(ScanMap));
        buffer_done(&s.paths);
        if (r < 0)
                return r;

        m->stats.rescans++;
        m->stats.rescan_changes += changes;
        if (time > m->latest_time)
                m->latest_time = time;
        return (int) MIN(changes, (unsigned) INT32_MAX);
}

/* ---- queries ---- */

static bool valid_at(uint64_t start, uint64_t end, uint64_t t) {
        return start <= t && t < end;
}

static bool overlaps(uint64_t start, uint64_t end, uint64_t t0, uint64_t t1) {
        return start <= t1 && end > t0;
}

static bool in_window(uint64_t x, uint64_t t0, uint64_t t1) {
        return x > t0 && x <= t1;
}

static int process_ptr_cmp(const void *a, const void *b) {
        const Process *x = *(Process *const *) a, *y = *(Process *const *) b;
        if (x->pid != y->pid)
                return x->pid < y->pid ? -1 : 1;
        return x->start < y->start ? -1 : x->start > y->start;
}

/* Processes alive at some time in [t0, t1], by pid. */
static int collect_processes(ProcMap *m, uint64_t t0, uint64_t t1, Process ***ret, size_t *ret_n) {
        _cleanup_free_ Process **v = NULL;
        size_t n = 0;

        v = reallocarray(NULL, MAX(m->n_processes, (size_t) 1), sizeof(Process *));
        if (!v)
                return -ENOMEM;
        for (size_t b = 0; b < m->n_buckets; b++)
                for (Process *p = m->buckets[b]; p; p = p->hash_next)
                        if (overlaps(p->start, p->end, t0, t1))
                                v[n++] = p;
        qsort(v, n, sizeof(Process *), process_ptr_cmp);
        *ret = TAKE_PTR(v);
        *ret_n = n;
        return 0;
}

static int thread_ptr_cmp(const void *a, const void *b) {
        const Thread *x = *(const Thread *const *) a, *y = *(const Thread *const *) b;
        return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static int mapping_ptr_cmp(const void *a, const void *b) {
        const Mapping *x = *(const Mapping *const *) a, *y = *(const Mapping *const *) b;
        return x->start < y->start ? -1 : x->start > y->start;
}

static int append_mmap2(Buffer *out, const Process *p, const Mapping *x, const PerfSampleId *sid) {
        const Image *img = x->image;

        return perf_record_append_mmap2(
                out, PERF_RECORD_MISC_USER, p->pid, p->pid, x->start, x->end - x->start, x->pgoff,
                img->has_build_id ? img->build_id : NULL, img->has_build_id ? img->build_id_size : 0,
                img->maj, img->min, img->ino, x->prot, x->mflags, img->path, sid);
}

static int synthesize_at_t0(ProcMap *m, const Process *p, uint64_t t0, Buffer *out, size_t *n_records) {
        _cleanup_free_ const Thread **th = NULL;
        _cleanup_free_ const Mapping **mp = NULL;
        size_t nt = 0, nm = 0;
        int r;

        th = reallocarray(NULL, (size_t) p->n_threads + p->n_old_threads + 1, sizeof(Thread *));
        mp = reallocarray(NULL, (size_t) p->n_maps + p->n_old_maps + 1, sizeof(Mapping *));
        if (!th || !mp)
                return -ENOMEM;

        for (uint32_t i = 0; i < p->n_threads; i++)
                if (valid_at(p->threads[i].time_start, p->threads[i].time_end, t0))
                        th[nt++] = &p->threads[i];
        for (uint32_t i = 0; i < p->n_old_threads; i++)
                if (valid_at(p->old_threads[i].time_start, p->old_threads[i].time_end, t0))
                        th[nt++] = &p->old_threads[i];
        qsort(th, nt, sizeof(Thread *), thread_ptr_cmp);
        for (uint32_t i = 0; i < p->n_maps; i++)
                if (valid_at(p->maps[i].time_start, p->maps[i].time_end, t0))
                        mp[nm++] = &p->maps[i];
        for (uint32_t i = 0; i < p->n_old_maps; i++)
                if (valid_at(p->old_maps[i].time_start, p->old_maps[i].time_end, t0))
                        mp[nm++] = &p->old_maps[i];
        qsort(mp, nm, sizeof(Mapping *), mapping_ptr_cmp);

        /* Leader first: a decoder learns the process from it. */
        for (int pass = 0; pass < 2; pass++)
                for (size_t i = 0; i < nt; i++) {
                        if ((th[i]->tid == p->pid) != (pass == 0))
                                continue;
                        PerfSampleId sid = { .pid = p->pid,
                                             .tid = th[i]->tid,
                                             .time = t0,
                                             .cpu = UINT32_MAX,
                                             .sample_type = PTRACED_SAMPLE_TYPE };
                        r = perf_record_append_comm(out, false, p->pid, th[i]->tid, th[i]->comm, &sid);
                        if (r < 0)
                                return r;
                        (*n_records)++;
                }
        for (size_t i = 0; i < nm;) {
                PerfSampleId sid = { .pid = p->pid,
                                     .tid = p->pid,
                                     .time = t0,
                                     .cpu = UINT32_MAX,
                                     .sample_type = PTRACED_SAMPLE_TYPE };
                Mapping x = *mp[i];

                /* Pieces of one mapping (split by a partial overlap later
                 * on, or VMAs that grew next to each other) go out as one. */
                for (i++; i < nm && mapping_continues(&x, mp[i]); i++)
                        x.end = mp[i]->end;
                r = append_mmap2(out, p, &x, &sid);
                if (r < 0)
                        return r;
                (*n_records)++;
        }
        return 0;
}

/* What a rescan learnt inside the window, replayed at the rescan's time. */
typedef enum RepairKind {
        REPAIR_UNMAP, /* at one time: unmaps, names, maps, thread exits, leader exit */
        REPAIR_COMM,
        REPAIR_MMAP,
        REPAIR_EXIT_THREAD,
        REPAIR_EXIT_LEADER,
} RepairKind;

typedef struct Repair {
        uint64_t time;
        RepairKind kind;
        const Process *p;
        const void *item; /* Thread or Mapping */
        uint64_t order;   /* tid or address */
} Repair;

static int repair_cmp(const void *a, const void *b) {
        const Repair *x = a, *y = b;

        if (x->time != y->time)
                return x->time < y->time ? -1 : 1;
        if (x->kind != y->kind)
                return x->kind < y->kind ? -1 : 1;
        if (x->p->pid != y->p->pid)
                return x->p->pid < y->p->pid ? -1 : 1;
        return x->order < y->order ? -1 : x->order > y->order;
}

static int repair_add(Repair **v, size_t *n, size_t *allocated, Repair x) {
        if (*n == *allocated) {
                size_t na = *allocated ? *allocated * 2 : 64;
                Repair *nv = reallocarray(*v, na, sizeof(Repair));
                if (!nv)
                        return -ENOMEM;
                *v = nv;
                *allocated = na;
        }
        (*v)[(*n)++] = x;
        return 0;
}

static int collect_repairs(const Process *p, uint64_t t0, uint64_t t1, Repair **v, size_t *n,
                           size_t *allocated) {
        bool proc_gone = (p->flags & PROC_EXIT_BY_SCAN) && in_window(p->end, t0, t1);
        int r = 0;

        for (int which = 0; which < 2 && r >= 0; which++) {
                const Thread *a = which == 0 ? p->threads : p->old_threads;
                uint32_t na = which == 0 ? p->n_threads : p->n_old_threads;

                for (uint32_t i = 0; i < na && r >= 0; i++) {
                        const Thread *x = &a[i];
                        if ((x->flags & SPAN_START_BY_SCAN) && in_window(x->time_start, t0, t1) &&
                            x->time_end > x->time_start)
                                r = repair_add(v, n, allocated,
                                               (Repair){ x->time_start, REPAIR_COMM, p, x, x->tid });
                        if (r >= 0 && (x->flags & SPAN_END_BY_SCAN) && in_window(x->time_end, t0, t1))
                                r = repair_add(
                                        v, n, allocated,
                                        (Repair){ x->time_end,
                                                  x->tid == p->pid ? REPAIR_EXIT_LEADER : REPAIR_EXIT_THREAD,
                                                  p, x, x->tid });
                }
        }
        for (int which = 0; which < 2 && r >= 0; which++) {
                const Mapping *a = which == 0 ? p->maps : p->old_maps;
                uint32_t na = which == 0 ? p->n_maps : p->n_old_maps;

                for (uint32_t i = 0; i < na && r >= 0; i++) {
                        const Mapping *x = &a[i];
                        if ((x->flags & SPAN_START_BY_SCAN) && in_window(x->time_start, t0, t1) &&
                            x->time_end > x->time_start)
                                r = repair_add(v, n, allocated,
                                               (Repair){ x->time_start, REPAIR_MMAP, p, x, x->start });
                        /* A process found gone needs no unmaps: its EXIT says it all. */
                        if (r >= 0 && (x->flags & SPAN_END_BY_SCAN) && in_window(x->time_end, t0, t1) &&
                            !(proc_gone && x->time_end == p->end))
                                r = repair_add(v, n, allocated,
                                               (Repair){ x->time_end, REPAIR_UNMAP, p, x, x->start });
                }
        }
        return r;
}

static int emit_repair(const Repair *x, Buffer *out) {
        const Process *p = x->p;
        PerfSampleId sid = { .pid = p->pid,
                             .tid = p->pid,
                             .time = x->time,
                             .cpu = UINT32_MAX,
                             .sample_type = PTRACED_SAMPLE_TYPE };

        switch (x->kind) {
        case REPAIR_UNMAP: {
                const Mapping *mp = x->item;
                return perf_record_append_mmap2(out, PERF_RECORD_MISC_USER | PERF_RECORD_MISC_MMAP_DATA,
                                                p->pid, p->pid, mp->start, mp->end - mp->start, 0, NULL, 0,
                                                0, 0, 0, PROT_READ, MAP_PRIVATE, "//anon", &sid);
        }
        case REPAIR_COMM: {
                const Thread *t = x->item;
                sid.tid = t->tid;
                return perf_record_append_comm(out, false, p->pid, t->tid, t->comm, &sid);
        }
        case REPAIR_MMAP:
                return append_mmap2(out, p, x->item, &sid);
        case REPAIR_EXIT_THREAD:
        case REPAIR_EXIT_LEADER: {
                const Thread *t = x->item;
                sid.tid = t->tid;
                return perf_record_append_fork(out, PERF_RECORD_EXIT, p->pid, p->ppid, t->tid, p->ppid,
                                               x->time, &sid);
        }
        }
        return -EINVAL;
}

int procmap_synthesize(ProcMap *m, uint64_t t0, uint64_t t1, Buffer *out) {
        _cleanup_free_ Process **v = NULL;
        _cleanup_free_ Repair *rep = NULL;
        size_t n = 0, n_rep = 0, allocated_rep = 0, n_records = 0, old_size;
        int r;

        assert(m);
        assert(out);
        if (t1 < t0)
                return -EINVAL;

        r = collect_processes(m, t0, t1, &v, &n);
        if (r < 0)
                return r;

        old_size = out->size;
        for (size_t i = 0; i < n; i++) {
                if (valid_at(v[i]->start, v[i]->end, t0)) {
                        r = synthesize_at_t0(m, v[i], t0, out, &n_records);
                        if (r < 0)
                                goto fail;
                }
                r = collect_repairs(v[i], t0, t1, &rep, &n_rep, &allocated_rep);
                if (r < 0)
                        goto fail;
        }
        if (n_rep > 0)
                qsort(rep, n_rep, sizeof(Repair), repair_cmp);
        for (size_t i = 0; i < n_rep; i++) {
                r = emit_repair(&rep[i], out);
                if (r < 0)
                        goto fail;
                n_records++;
        }
        return (int) MIN(n_records, (size_t) INT32_MAX);

fail:
        out->size = old_size;
        return r;
}

typedef struct ImageHit {
        Image *image;
        const Process *p;
        const Mapping *x;
        bool alive;
} ImageHit;

int procmap_images(ProcMap *m, uint64_t t0, uint64_t t1, ProcMapImageCallback cb, void *userdata) {
        _cleanup_free_ Process **v = NULL;
        _cleanup_free_ ImageHit *hits = NULL;
        size_t n = 0, n_hits = 0, allocated = 0;
        int r;

        assert(m);
        assert(cb);
        if (t1 < t0)
                return -EINVAL;

        r = collect_processes(m, t0, t1, &v, &n);
        if (r < 0)
                return r;

        m->visit_gen++;
        for (size_t i = 0; i < n; i++) {
                const Process *p = v[i];
                const Mapping *vdso = NULL;
                bool vdso_alive = false;

                for (int which = 0; which < 2; which++) {
                        const Mapping *a = which == 0 ? p->maps : p->old_maps;
                        uint32_t na = which == 0 ? p->n_maps : p->n_old_maps;

                        for (uint32_t k = 0; k < na; k++) {
                                const Mapping *x = &a[k];
                                Image *img = x->image;
                                bool alive = p->end == INF && x->time_end == INF;
                                ImageHit *h;

                                if (!overlaps(x->time_start, x->time_end, t0, t1) ||
                                    x->time_end == x->time_start)
                                        continue;
                                if (img->kind == PROCMAP_IMAGE_VDSO) {
                                        if (!vdso || (alive && !vdso_alive)) {
                                                vdso = x;
                                                vdso_alive = alive;
                                        }
                                        continue;
                                }
                                if (img->kind == PROCMAP_IMAGE_FILE && img->visit_gen == m->visit_gen) {
                                        h = &hits[img->visit_idx];
                                        if (alive && !h->alive)
                                                *h = (ImageHit){ img, p, x, alive };
                                        continue;
                                }
                                if (n_hits == allocated) {
                                        size_t na2 = allocated ? allocated * 2 : 64;
                                        ImageHit *nh = reallocarray(hits, na2, sizeof(ImageHit));
                                        if (!nh)
                                                return -ENOMEM;
                                        hits = nh;
                                        allocated = na2;
                                }
                                img->visit_gen = m->visit_gen;
                                img->visit_idx = (uint32_t) n_hits;
                                hits[n_hits++] = (ImageHit){ img, p, x, alive };
                        }
                }
                if (vdso) {
                        if (n_hits == allocated) {
                                size_t na2 = allocated ? allocated * 2 : 64;
                                ImageHit *nh = reallocarray(hits, na2, sizeof(ImageHit));
                                if (!nh)
                                        return -ENOMEM;
                                hits = nh;
                                allocated = na2;
                        }
                        hits[n_hits++] = (ImageHit){ vdso->image, p, vdso, vdso_alive };
                }
        }

        for (size_t i = 0; i < n_hits; i++) {
                const ImageHit *h = &hits[i];
                const Image *img = h->image;
                ProcMapImage e = {
                        .kind = img->kind,
                        .path = img->path,
                        .build_id = img->has_build_id ? img->build_id : NULL,
                        .build_id_size = img->has_build_id ? img->build_id_size : 0,
                        .maj = img->maj,
                        .min = img->min,
                        .ino = img->ino,
                        .pid = (pid_t) h->p->pid,
                        .pid_alive = h->alive,
                        .start = h->x->start,
                        .end = h->x->end,
                        .pgoff = h->x->pgoff,
                };
                r = cb(&e, userdata);
                if (r < 0)
                        return r;
        }
        return (int) MIN(n_hits, (size_t) INT32_MAX);
}

int procmap_get_process(ProcMap *m, pid_t pid, uint64_t time, ProcMapProcessInfo *ret) {
        const Process *p;
        const Thread *leader = NULL;
        unsigned nt = 0, nm = 0;

        assert(m);
        assert(ret);

        if (pid <= 0)
                return -ENOENT;
        p = process_at(m, (uint32_t) pid, time);
        if (!p)
                return -ENOENT;

        for (int which = 0; which < 2; which++) {
                const Thread *a = which == 0 ? p->threads : p->old_threads;
                uint32_t na = which == 0 ? p->n_threads : p->n_old_threads;
                for (uint32_t i = 0; i < na; i++)
                        if (valid_at(a[i].time_start, a[i].time_end, time)) {
                                nt++;
                                if (a[i].tid == p->pid)
                                        leader = &a[i];
                        }
        }
        for (int which = 0; which < 2; which++) {
                const Mapping *a = which == 0 ? p->maps : p->old_maps;
                uint32_t na = which == 0 ? p->n_maps : p->n_old_maps;
                for (uint32_t i = 0; i < na; i++)
                        if (valid_at(a[i].time_start, a[i].time_end, time))
                                nm++;
        }

        *ret = (ProcMapProcessInfo){
                .pid = (pid_t) p->pid,
                .ppid = (pid_t) p->ppid,
                .start = p->start,
                .end = p->end,
                .forked = p->flags & PROC_FORKED,
                .n_threads = nt,
                .n_mappings = nm,
        };
        if (leader)
                copy_comm(ret->comm, leader->comm);
        return 0;
}

void procmap_get_stats(const ProcMap *m, ProcMapStats *ret) {
        assert(m);
        assert(ret);

        *ret = m->stats;
        ret->processes_live = m->n_processes - m->n_dead;
        ret->processes_dead = m->n_dead;
        ret->threads_live = m->threads_live;
        ret->threads_dead = m->threads_dead;
        ret->mappings_live = m->mappings_live;
        ret->mappings_dead = m->mappings_dead;
        ret->images = m->n_images;
        ret->buildid_cache_entries = m->n_bid;
        ret->bytes = m->bytes + sizeof(ProcMap);
}

/* ---- lifetime ---- */

int procmap_new(const ProcMapOptions *opts, ProcMap **ret) {
        _cleanup_(procmap_freep) ProcMap *m = NULL;
        ProcMapOptions o = opts ? *opts : (ProcMapOptions){};

        assert(ret);

        m = calloc(1, sizeof(ProcMap));
        if (!m)
                return -ENOMEM;
        m->proc_fd = -EBADF;
        m->proc_root = strdup(o.proc_root ?: "/proc");
        if (!m->proc_root)
                return -ENOMEM;
        m->proc_fd = open(m->proc_root, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (m->proc_fd < 0)
                return -errno;

        if (o.retention == 0)
                o.retention = PROCMAP_RETENTION_DEFAULT;
        if (o.retention == USEC_INFINITY || o.retention > UINT64_MAX / NSEC_PER_USEC)
                m->retention = INF;
        else
                m->retention = o.retention * NSEC_PER_USEC;
        m->max_processes = o.max_processes ?: PROCMAP_MAX_PROCESSES_DEFAULT;
        m->max_mappings = o.max_mappings ?: PROCMAP_MAX_MAPPINGS_DEFAULT;
        m->max_threads = o.max_threads ?: PROCMAP_MAX_THREADS_DEFAULT;

        m->n_buckets = 1024;
        m->buckets = pm_malloc0(m, m->n_buckets * sizeof(Process *));
        m->n_image_buckets = 256;
        m->image_buckets = pm_malloc0(m, m->n_image_buckets * sizeof(Image *));
        m->n_bid_buckets = 1024;
        m->bid_buckets = pm_malloc0(m, m->n_bid_buckets * sizeof(BuildIdEntry *));
        if (!m->buckets || !m->image_buckets || !m->bid_buckets)
                return -ENOMEM;

        *ret = TAKE_PTR(m);
        return 0;
}

ProcMap *procmap_free(ProcMap *m) {
        if (!m)
                return NULL;

        if (m->buckets)
                for (size_t b = 0; b < m->n_buckets; b++)
                        while (m->buckets[b]) {
                                Process *p = m->buckets[b];
                                m->buckets[b] = p->hash_next;
                                process_destroy(m, p);
                        }
        if (m->bid_buckets)
                bid_clear(m);
        assert(m->n_images == 0);
        free(m->buckets);
        free(m->image_buckets);
        free(m->bid_buckets);
        safe_close(m->proc_fd);
        free(m->proc_root);
        return mfree(m);
}
