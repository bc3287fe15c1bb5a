/* SPDX-License-Identifier: MIT */

/*
 * Reading /proc: each process's stat, threads (task/TID/comm) and
 * executable mappings (maps), handed to the model one process at a time to
 * reconcile; and the name of a task kthreadd just made.
 */

#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <sys/mman.h>

#include "common/basic/fileio.h"
#include "daemon/procmap/internal.h"

#define MAPS_LINE_MAX (MODEL_PATH_MAX + 256U)

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

/* One process as /proc shows it, read into reused buffers. */
typedef struct Scan {
        ModelObservedThread *threads;
        size_t n_threads, allocated_threads;
        ModelObservedMapping *maps;
        size_t *path_offs; /* where each mapping's path is in paths (which moves while it grows) */
        size_t n_maps, allocated_maps;
        Buffer paths;
        char line[MAPS_LINE_MAX + 2];
} Scan;

static void scan_done(Scan *s) {
        free(s->threads);
        free(s->maps);
        free(s->path_offs);
        buffer_done(&s->paths);
}

/* Room for one more element in *array. */
static int grow(void **array, size_t *allocated, size_t n, size_t elem) {
        size_t na;
        void *p;

        if (n < *allocated)
                return 0;
        na = MAX(*allocated * 2, (size_t) 16);
        p = reallocarray(*array, na, elem);
        if (!p)
                return -ENOMEM;
        *array = p;
        *allocated = na;
        return 0;
}

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
static int parse_maps_line(char *line, ModelObservedMapping *ret, const char **ret_path) {
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
        kind = model_image_kind(s);
        if (kind < 0)
                return 0;
        if (kind == MODEL_IMAGE_FILE && (ino == 0 || strlen(s) > MODEL_PATH_MAX))
                return 0;
        if (kind == MODEL_IMAGE_ANON && !s[0])
                s = "//anon";

        *ret = (ModelObservedMapping){
                .start = start,
                .end = end,
                .pgoff = pgoff,
                .ino = kind == MODEL_IMAGE_FILE ? ino : 0,
                .maj = kind == MODEL_IMAGE_FILE ? (uint32_t) maj : 0,
                .min = kind == MODEL_IMAGE_FILE ? (uint32_t) min : 0,
                .mflags = perms[3] == 's' ? MAP_SHARED : MAP_PRIVATE,
                .prot = (uint8_t) ((perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) |
                                   PROT_EXEC),
                .kind = kind,
        };
        *ret_path = s;
        return 1;
}

static int scan_map_cmp(const void *a, const void *b) {
        const ModelObservedMapping *x = a, *y = b;
        return x->start < y->start ? -1 : x->start > y->start;
}

/* maps: "maps", or "task/TID/maps" of a live thread (see scan_one()). */
static int scan_read_maps(ProcMap *m, Scan *s, int pid_fd, const char *maps) {
        _cleanup_fclose_ FILE *f = NULL;
        int fd;

        s->n_maps = 0;
        buffer_clear(&s->paths);

        fd = openat(pid_fd, maps, O_RDONLY | O_CLOEXEC | O_NOCTTY);
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
                ModelObservedMapping sm;
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
                r = grow((void **) &s->maps, &s->allocated_maps, s->n_maps, sizeof(ModelObservedMapping));
                if (r >= 0) {
                        size_t *o = reallocarray(s->path_offs, s->allocated_maps, sizeof(size_t));
                        if (!o)
                                return -ENOMEM;
                        s->path_offs = o;
                }
                if (r < 0)
                        return r;
                s->path_offs[s->n_maps] = s->paths.size;
                r = buffer_append(&s->paths, path, strlen(path) + 1);
                if (r < 0)
                        return r;
                s->maps[s->n_maps++] = sm;
        }
        if (ferror(f))
                return errno > 0 ? -errno : -EIO;
        /* The paths stay where they are now. */
        for (size_t i = 0; i < s->n_maps; i++)
                s->maps[i].path = (const char *) s->paths.data + s->path_offs[i];
        /* The kernel lists them by address; a fake or hostile file may not. */
        if (s->n_maps > 1)
                qsort(s->maps, s->n_maps, sizeof(ModelObservedMapping), scan_map_cmp);
        return 0;
}

static int scan_thread_cmp(const void *a, const void *b) {
        uint32_t x = ((const ModelObservedThread *) a)->tid, y = ((const ModelObservedThread *) b)->tid;
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

                if (!parse_u32_dec(de->d_name, &tid) || tid == 0 || tid == UINT32_MAX)
                        continue;
                if (s->n_threads >= m->max_threads)
                        break;
                (void) snprintf(path, sizeof path, "%s/comm", de->d_name);
                if (read_small_at(dirfd(d), path, comm, sizeof comm) < 0)
                        continue; /* the thread just exited */
                comm_clean(comm);
                r = grow((void **) &s->threads, &s->allocated_threads, s->n_threads, sizeof(ModelObservedThread));
                if (r < 0)
                        break;
                s->threads[s->n_threads].tid = tid;
                memset(s->threads[s->n_threads].comm, 0, PERF_COMM_MAX);
                memcpy(s->threads[s->n_threads].comm, comm, strlen(comm)); /* cut to 15 by comm_clean() */
                s->n_threads++;
        }
        closedir(d);
        if (r < 0)
                return r;
        if (s->n_threads > 1)
                qsort(s->threads, s->n_threads, sizeof(ModelObservedThread), scan_thread_cmp);
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

static int scan_one(ProcMap *m, Scan *s, int pid_fd, uint32_t pid, uint64_t time) {
        uint64_t starttime = 0;
        uint32_t ppid = 0, pflags = 0;
        char state = 0;
        int r;

        r = scan_read_stat(pid_fd, &state, &ppid, &pflags, &starttime);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return 0; /* gone (or not a process): not seen, ends at the end if known */
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
        /* A leader that exited while other threads run is a zombie whose
         * /proc/PID/maps is empty (its task has no mm any more), though the
         * process keeps its address space: read a live thread's. */
        char maps[64] = "maps";
        if (state == 'Z' || state == 'X')
                FOREACH_ARRAY(st, s->threads, s->n_threads)
                        if (st->tid != pid) {
                                snprintf(maps, sizeof maps, "task/%" PRIu32 "/maps", st->tid);
                                break;
                        }
        r = scan_read_maps(m, s, pid_fd, maps);
        if (r == -ENOMEM)
                return r;
        if (r == -ENOENT || r == -ESRCH)
                return 0;

        ModelObservedProcess o = {
                .pid = pid,
                .ppid = ppid,
                .starttime = starttime,
                .threads = s->threads,
                .n_threads = s->n_threads,
                .maps = s->maps,
                .n_maps = s->n_maps,
                /* Unreadable (not ours to read) is not empty: keep what we know. */
                .maps_known = r >= 0,
        };
        m->scan_pid = pid;
        m->scan_pid_fd = pid_fd;
        r = model_reconcile_process(m->model, &o, time);
        m->scan_pid = 0;
        m->scan_pid_fd = -EBADF;
        return r < 0 ? r : 0;
}

int procmap_scan_proc(ProcMap *m, uint64_t time) {
        _cleanup_close_ int dfd = -EBADF;
        Scan s = {};
        DIR *d;
        struct dirent *de;
        int r = 0, k;

        assert(m);

        dfd = openat(m->proc_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return -errno;
        d = fdopendir(dfd);
        if (!d)
                return -errno;
        dfd = -EBADF;

        model_reconcile_begin(m->model);
        while ((de = readdir(d))) {
                _cleanup_close_ int pid_fd = -EBADF;
                uint32_t pid;

                if (!parse_u32_dec(de->d_name, &pid) || pid == 0 || pid == UINT32_MAX)
                        continue;
                pid_fd = openat(dirfd(d), de->d_name, O_PATH | O_DIRECTORY | O_CLOEXEC);
                if (pid_fd < 0)
                        continue;
                r = scan_one(m, &s, pid_fd, pid, time);
                if (r < 0)
                        break;
        }
        closedir(d);
        scan_done(&s);
        /* Whatever is current and was not seen has exited; unless the scan
         * broke off. */
        k = model_reconcile_end(m->model, time, r >= 0);
        return r < 0 ? r : k;
}

int procmap_read_task_comm(ProcMap *m, uint32_t pid, char buf[static PERF_COMM_MAX]) {
        char path[32], name[64];

        (void) snprintf(path, sizeof path, "%" PRIu32 "/comm", pid);
        if (read_small_at(m->proc_fd, path, name, sizeof name) <= 0)
                return 0;
        comm_clean(name);
        comm_strip_kworker(name);
        memcpy(buf, name, PERF_COMM_MAX);
        return 1;
}

int procmap_read_code_regions(pid_t pid, ProcMapCodeRegion **ret, size_t *ret_n) {
        _cleanup_free_ ProcMapCodeRegion *v = NULL;
        _cleanup_fclose_ FILE *f = NULL;
        size_t n = 0, allocated = 0;
        char path[64], line[512];

        (void) snprintf(path, sizeof path, "/proc/%d/maps", (int) pid);
        f = fopen(path, "re");
        if (!f)
                return -errno;
        while (fgets(line, sizeof line, f)) {
                size_t l = strlen(line);
                ModelObservedMapping sm;
                const char *name;
                int r;

                if (l > 0 && line[l - 1] == '\n')
                        line[--l] = 0;
                else if (!feof(f)) {
                        int c;
                        while ((c = fgetc(f)) != EOF && c != '\n')
                                ;
                        continue;
                }
                if (parse_maps_line(line, &sm, &name) <= 0)
                        continue;
                /* Code no file holds: anonymous memory, and memfds (a JIT
                 * that maps its code twice, writable and executable). */
                if (!(sm.kind == MODEL_IMAGE_ANON || (sm.kind == MODEL_IMAGE_FILE && startswith(name, "/memfd:"))))
                        continue;
                if (n >= PROCMAP_CODE_REGIONS_MAX)
                        break;
                r = grow((void **) &v, &allocated, n, sizeof *v);
                if (r < 0)
                        return r;
                v[n] = (ProcMapCodeRegion){ .start = sm.start, .end = sm.end };
                (void) snprintf(v[n].name, sizeof v[n].name, "%s", name);
                n++;
        }
        *ret = TAKE_PTR(v);
        *ret_n = n;
        return 0;
}

pid_t procmap_ns_pid(pid_t pid) {
        _cleanup_free_ char *status = NULL;
        char path[64];
        const char *l;
        pid_t v = pid;

        (void) snprintf(path, sizeof path, "/proc/%d/status", (int) pid);
        if (read_full_file(path, 64 * 1024, &status, NULL) < 0)
                return pid;
        l = strstr(status, "\nNSpid:");
        if (!l)
                return pid;
        for (l += strlen("\nNSpid:"); *l && *l != '\n';) {
                char *end;
                long x = strtol(l, &end, 10);

                if (end == l)
                        break;
                if (x > 0 && x <= INT_MAX)
                        v = (pid_t) x;
                l = end;
        }
        return v;
}
