/* SPDX-License-Identifier: MIT */

/*
 * The images a libipt decoder of a synthesized bundle uses: the kernel
 * image and every process's mappings, per process or tagged by CR3, and
 * the static key's bytes around text pokes.
 */

#include "check-internal.h"

/* Images */

/* file: where libipt reads img's bytes (img->path, or a copy of an image
 * loaded from memory). */
static int add_image_sections(struct pt_image *image, struct pt_image_section_cache *isc,
                              const SynthImage *img, const char *file, int64_t bias,
                              const struct pt_asid *asid) {
        for (size_t i = 0; i < img->n_segments; i++) {
                const SynthSegment *s = &img->segments[i];
                int isid, r;

                if (!(s->flags & 1 /* PF_X */))
                        continue;
                isid = pt_iscache_add_file(isc, file, s->offset, s->filesz, s->vaddr + (uint64_t)bias);
                if (isid < 0)
                        return -EIO;
                r = pt_image_add_cached(image, isc, isid, asid);
                if (r < 0)
                        return -EIO;
        }
        return 0;
}

static int add_process(struct pt_image *image, struct pt_image_section_cache *isc,
                       const SynthProcessResult *proc, const struct pt_asid *asid) {
        for (size_t i = 0; i < proc->as->n_maps; i++) {
                const SynthMapping *m = &proc->as->maps[i];
                int r = add_image_sections(image, isc, m->image, m->image->path, m->bias, asid);

                if (r < 0)
                        return r;
        }
        return 0;
}

void check_images_done(Images *im, size_t n_procs) {
        pt_image_free(im->all);
        pt_image_free(im->kernel_only);
        for (size_t i = 0; im->procs && i < n_procs; i++)
                pt_image_free(im->procs[i]);
        free(im->procs);
        pt_iscache_free(im->isc);
        free(im->tids);
        free(im->tid_pids);
        free(im->tid_forked);
        for (size_t i = 0; i < ELEMENTSOF(im->poke_fds); i++) {
                if (im->poke_paths[i])
                        safe_close(im->poke_fds[i]);
                free(im->poke_paths[i]);
        }
        safe_close(im->kernel_fd);
        free(im->kernel_file);
}

/* A file of n bytes at b, as a memfd, and a path libipt opens it by. */
static int memfd_file(const char *name, const void *b, size_t n, int *ret_fd, char **ret_path) {
        _cleanup_close_ int fd = memfd_create(name, MFD_CLOEXEC);

        if (fd < 0)
                return -errno;
        if (write(fd, b, n) != (ssize_t)n)
                return -EIO;
        if (asprintf(ret_path, "/proc/self/fd/%d", fd) < 0) {
                *ret_path = NULL;
                return -ENOMEM;
        }
        *ret_fd = TAKE_FD(fd);
        return 0;
}

/* The static key's bytes in state k on top of every image's kernel text. */
int check_images_poke(const SynthResult *res, const Images *im, size_t k) {
        uint64_t addr = res->pokes[0].addr;
        int r;

        r = pt_image_add_file(im->all, im->poke_paths[k], 0, 5, NULL, addr);
        if (r >= 0)
                r = pt_image_add_file(im->kernel_only, im->poke_paths[k], 0, 5, NULL, addr);
        for (size_t p = 0; r >= 0 && p < res->n_procs; p++)
                r = pt_image_add_file(im->procs[p], im->poke_paths[k], 0, 5, NULL, addr);
        return r < 0 ? -EIO : 0;
}

/* Whether process pid was forked during the run (its first thread known
 * from a FORK, not from a COMM at the start): it runs its parent's image
 * until it execs, if it does. */
static bool forked(const Images *im, uint32_t pid) {
        for (size_t i = 0; i < im->n_tids; i++)
                if (im->tids[i] == pid)
                        return im->tid_forked[i];
        return false;
}

int check_images_build(const SynthResult *res, Images *im) {
        const SynthImage *kimg;
        int r;

        im->isc = pt_iscache_alloc(NULL);
        im->all = pt_image_alloc("all");
        im->kernel_only = pt_image_alloc("kernel");
        im->procs = calloc(MAX(res->n_procs, (size_t)1), sizeof *im->procs);
        if (!im->isc || !im->all || !im->kernel_only || !im->procs)
                return -ENOMEM;
        kimg = res->kernel->image;
        if (kimg->memory)
                r = memfd_file("ptsynth-check-kernel", kimg->memory, kimg->size, &im->kernel_fd,
                               &im->kernel_file);
        else
                r = (im->kernel_file = strdup(kimg->path)) ? 0 : -ENOMEM;
        if (r < 0)
                return r;
        r = add_image_sections(im->all, im->isc, kimg, im->kernel_file, 0, NULL);
        if (r >= 0)
                r = add_image_sections(im->kernel_only, im->isc, kimg, im->kernel_file, 0, NULL);
        if (r < 0)
                return r;
        /* Threads to processes, from COMM and FORK records. */
        {
                PerfRecordStream st;
                const void *rec;
                size_t size;

                perf_record_stream_init(&st, res->sideband, res->sideband_size);
                while (perf_record_stream_next(&st, &rec, &size) > 0) {
                        PerfRecord pr;
                        uint32_t pid, tid;
                        void *a, *b, *f;

                        if (perf_record_parse(rec, size, SYNTH_SAMPLE_TYPE, true, &pr) < 0)
                                continue;
                        if (pr.type == PERF_RECORD_COMM) {
                                pid = pr.comm.pid;
                                tid = pr.comm.tid;
                        } else if (pr.type == PERF_RECORD_FORK) {
                                pid = pr.fork.pid;
                                tid = pr.fork.tid;
                        } else
                                continue;
                        a = realloc(im->tids, (im->n_tids + 1) * sizeof *im->tids);
                        if (a)
                                im->tids = a;
                        b = realloc(im->tid_pids, (im->n_tids + 1) * sizeof *im->tid_pids);
                        if (b)
                                im->tid_pids = b;
                        f = realloc(im->tid_forked, (im->n_tids + 1) * sizeof *im->tid_forked);
                        if (f)
                                im->tid_forked = f;
                        if (!a || !b || !f)
                                return -ENOMEM;
                        im->tid_forked[im->n_tids] = pr.type == PERF_RECORD_FORK;
                        im->tids[im->n_tids] = tid;
                        im->tid_pids[im->n_tids++] = pid;
                }
        }
        for (size_t p = 0; p < res->n_procs; p++) {
                struct pt_asid asid;

                pt_asid_init(&asid);
                asid.cr3 = res->procs[p].cr3;
                /* A process forked during the run runs its parent's image
                 * (the first process's) until it execs: both, its own over
                 * the parent's where they overlap (the same executable at
                 * the same address when they do); here and below. */
                r = 0;
                if (p > 0 && forked(im, res->procs[p].pid))
                        r = add_process(im->all, im->isc, &res->procs[0], &asid);
                if (r >= 0)
                        r = add_process(im->all, im->isc, &res->procs[p], &asid);
                if (r < 0)
                        return r;
                im->procs[p] = pt_image_alloc(res->procs[p].comm);
                if (!im->procs[p])
                        return -ENOMEM;
                r = add_image_sections(im->procs[p], im->isc, kimg, im->kernel_file, 0, NULL);
                if (r >= 0 && p > 0 && forked(im, res->procs[p].pid))
                        r = add_process(im->procs[p], im->isc, &res->procs[0], NULL);
                if (r >= 0)
                        r = add_process(im->procs[p], im->isc, &res->procs[p], NULL);
                if (r < 0)
                        return r;
        }

        for (size_t k = 0; res->n_pokes > 0 && k <= res->n_pokes; k++) {
                const uint8_t *b = k == 0 ? res->pokes[0].old_bytes : res->pokes[k - 1].new_bytes;

                r = memfd_file("ptsynth-check-poke", b, 5, &im->poke_fds[k], &im->poke_paths[k]);
                if (r < 0)
                        return r;
        }

        return 0;
}

/* The image for thread tid: its process's, or the kernel's for the idle
 * task and threads the side-band does not know (which then cannot run
 * user code without a decode error). */
struct pt_image *check_images_for_tid(const SynthResult *res, const Images *im, uint32_t tid) {
        for (size_t i = 0; tid != 0 && i < im->n_tids; i++)
                if (im->tids[i] == tid)
                        for (size_t p = 0; p < res->n_procs; p++)
                                if (res->procs[p].pid == im->tid_pids[i])
                                        return im->procs[p];
        return im->kernel_only;
}
