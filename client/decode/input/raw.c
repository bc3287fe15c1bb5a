/* SPDX-License-Identifier: MIT */

/*
 * Raw mode: a DecodeInput from files named on the command line, in the
 * spirit of ptxed's --pt/--elf/--raw/--pevent options (client/decode/input/raw.h).
 */

#include "client/decode/input/raw.h"
#include "common/basic/parse-util.h"

/* "PATH@ADDR": the address is what follows the last '@' when it parses as
 * a number; otherwise the whole string is the path (file names may hold '@'). */
static int split_at_addr(const char *spec, char **ret_path, bool *ret_has_addr, uint64_t *ret_addr) {
        const char *at = strrchr(spec, '@');
        uint64_t addr;

        if (at && at != spec && parse_uint64(at + 1, &addr) >= 0) {
                *ret_path = strndup(spec, at - spec);
                *ret_has_addr = true;
                *ret_addr = addr;
        } else {
                *ret_path = strdup(spec);
                *ret_has_addr = false;
                *ret_addr = 0;
        }
        return *ret_path ? 0 : -ENOMEM;
}

int decode_input_add_image_spec(DecodeInput *in, const char *spec, bool raw, char **ret_error) {
        DecodeImage img = { .fd = -EBADF, .kind = raw ? DECODE_IMAGE_RAW : DECODE_IMAGE_ELF };
        char *path = NULL;
        int r;

        r = split_at_addr(spec, &path, &img.has_addr, &img.addr);
        if (r < 0)
                return r;
        if (!*path) {
                free(path);
                if (asprintf(ret_error, "image '%s': no file name", spec) < 0)
                        *ret_error = NULL;
                return -EINVAL;
        }
        if (raw && !img.has_addr) {
                free(path);
                if (asprintf(ret_error, "raw image '%s' needs an address: FILE@ADDR", spec) < 0)
                        *ret_error = NULL;
                return -EINVAL;
        }
        if (access(path, R_OK) < 0) {
                r = negative_errno();
                if (asprintf(ret_error, "image %s: %s", path, strerror(-r)) < 0)
                        *ret_error = NULL;
                free(path);
                return r;
        }
        img.path = path;
        img.name = strdup(path);
        if (!img.name) {
                decode_image_done(&img);
                return -ENOMEM;
        }
        r = decode_input_add_image(in, &img);
        decode_image_done(&img);
        return r;
}

int decode_input_from_raw(const DecodeRawOptions *o, DecodeInput **ret, char **ret_error) {
        _cleanup_(decode_input_freep) DecodeInput *in = NULL;
        _cleanup_free_ char *desc = NULL;
        int r;

        if (o->n_pt == 0) {
                *ret_error = strdup("raw mode needs a trace: --pt FILE");
                return -EINVAL;
        }
        if (asprintf(&desc, "raw trace %s%s", o->pt[0].path, o->n_pt > 1 ? " and more" : "") < 0)
                return -ENOMEM;
        r = decode_input_new(desc, &in);
        if (r < 0)
                return r;

        for (size_t i = 0; i < o->n_pt; i++) {
                r = decode_input_add_cpu_file(in, o->pt[i].cpu, o->pt[i].path, ret_error);
                if (r < 0)
                        return r;
        }
        /* One trace without --pt-cpu: the side-band may tell its CPU. */
        if (o->n_pt == 1 && !o->pt[0].has_cpu)
                in->cpus[0].cpu_unspecified = true;

        for (char **s = o->sidebands; s && *s; s++) {
                r = decode_input_add_sideband_file(in, *s, o->sample_type, true, ret_error);
                if (r < 0)
                        return r;
        }
        for (char **s = o->images; s && *s; s++) {
                r = decode_input_add_image_spec(in, *s, false, ret_error);
                if (r < 0)
                        return r;
        }
        for (char **s = o->raw_images; s && *s; s++) {
                r = decode_input_add_image_spec(in, *s, true, ret_error);
                if (r < 0)
                        return r;
        }
        if (o->kallsyms) {
                r = decode_input_set_kallsyms_file(in, o->kallsyms, ret_error);
                if (r < 0)
                        return r;
        }
        for (char **s = o->filters; s && *s; s++) {
                r = decode_input_add_addr_filters(in, *s, ret_error);
                if (r < 0)
                        return r;
        }
        in->cpu_model = o->cpu_model;
        in->mtc_freq = o->mtc_freq;
        in->nom_freq = o->nom_freq;
        in->cpuid_15_eax = o->cpuid_15_eax;
        in->cpuid_15_ebx = o->cpuid_15_ebx;
        in->has_tsc_conversion = o->has_tsc_conversion;
        in->tsc_conversion = o->tsc_conversion;
        in->kernel_absent_reason = strdup("raw mode: no kernel image given (--image vmlinux-or-kcore.elf)");
        if (!in->kernel_absent_reason)
                return -ENOMEM;
        *ret = TAKE_PTR(in);
        return 0;
}

void decode_raw_options_done(DecodeRawOptions *o) {
        free(o->pt);
        strv_free(o->images);
        strv_free(o->raw_images);
        strv_free(o->sidebands);
        strv_free(o->filters);
        *o = (DecodeRawOptions){};
}
