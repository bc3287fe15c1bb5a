/* SPDX-License-Identifier: MIT */

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/stat.h>

#include "common/basic/string-util.h"
#include "common/pt/kernel-filter.h"

const char *kernel_filter_action_to_string(KernelFilterAction a) {
        static const char *const names[] = {
                [KERNEL_FILTER_FILTER] = "filter",
                [KERNEL_FILTER_START] = "start",
                [KERNEL_FILTER_STOP] = "stop",
        };
        return (unsigned) a < ELEMENTSOF(names) ? names[a] : NULL;
}

KernelFilter *kernel_filters_free(KernelFilter *f, size_t n) {
        for (size_t i = 0; f && i < n; i++)
                free(f[i].file);
        return mfree(f);
}

/* A number as lib/parser.c's match_one() finds it (simple_strtoul with
 * base 0: 0x and a hex digit make it hex, a leading 0 octal, no sign) and
 * kstrtoul() then converts it: *ret_end is where the digits stop (== s
 * when there are none, no match), *ret_overflow when the value does not
 * fit an unsigned long (kstrtoul: -ERANGE). */
static void kernel_number(const char *s, const char **ret_end, uint64_t *ret, bool *ret_overflow) {
        unsigned base = 10;
        uint64_t v = 0;
        bool overflow = false;
        const char *p = s;

        if (p[0] == '0') {
                if (tolower((unsigned char) p[1]) == 'x' && isxdigit((unsigned char) p[2])) {
                        base = 16;
                        p += 2;
                } else
                        base = 8;
        }
        for (;; p++) {
                unsigned d;

                if (isdigit((unsigned char) *p))
                        d = (unsigned) (*p - '0');
                else if (isxdigit((unsigned char) *p))
                        d = (unsigned) (tolower((unsigned char) *p) - 'a' + 10);
                else
                        break;
                if (d >= base)
                        break;
                if (v > (UINT64_MAX - d) / base)
                        overflow = true;
                v = v * base + d;
        }
        *ret_end = p;
        *ret = v;
        *ret_overflow = overflow;
}

/* The source tokens of if_tokens, tried in the table's order:
 * "%u/%u@%s", "%u/%u", "%u@%s", "%u". Returns 1 on a match, 0 when none
 * matches (EINVAL), -ERANGE when a number overflows. */
static int match_source(const char *tok, KernelFilter *f, bool *ret_has_size, const char **ret_file) {
        const char *p;
        bool overflow, overflow_size = false;

        kernel_number(tok, &p, &f->offset, &overflow);
        if (p == tok)
                return 0;
        *ret_has_size = false;
        if (*p == '/') {
                const char *q;

                kernel_number(p + 1, &q, &f->size, &overflow_size);
                if (q == p + 1)
                        return 0;
                *ret_has_size = true;
                p = q;
        }
        if (*p == '@' && p[1])
                *ret_file = p + 1;
        else if (*p)
                return 0;
        else
                *ret_file = NULL;
        /* kstrtoul() of each number, in order, after the whole token
         * matched. */
        return overflow || overflow_size ? -ERANGE : 1;
}

/* valid_kernel_ip() of kernels before v5.18, for x86-64: the kernel's
 * half of the address space. (The kernel also wanted it in the direct
 * map or the kernel image, which refused module addresses; the emulated
 * machine has no such map to check.) */
static bool kernel_half(uint64_t a) {
        return a >= 0xffff800000000000ULL;
}

static int parse_tokens(char *s, const KernelFilterEvent *ev, KernelFilter **filters, size_t *n,
                        char **ret_error) {
        enum { WANT_ACTION, WANT_SOURCE } state = WANT_ACTION;
        const char *action_token = NULL;
        char *tok;

        /* perf_event_parse_addr_filter(): strsep(" ,\n"), empty tokens
         * skipped, a state machine of action then source. */
        while ((tok = strsep(&s, " ,\n"))) {
                static const char *const actions[] = { "filter", "start", "stop" };
                KernelFilter scratch = {}, *f;
                const char *file = NULL;
                int action = -1;
                bool has_size = false;
                int r;

                if (!*tok)
                        continue;

                for (size_t i = 0; i < ELEMENTSOF(actions); i++)
                        if (streq(tok, actions[i]))
                                action = (int) i;
                if (action >= 0) {
                        if (state != WANT_ACTION)
                                return set_error_message(
                                        -EINVAL, ret_error,
                                        "'%s %s': an address must follow '%s', not another action "
                                        "(perf_event_parse_addr_filter: EINVAL)",
                                        action_token, tok, action_token);
                        KernelFilter *a = reallocarray(*filters, *n + 1, sizeof(KernelFilter));
                        if (!a)
                                return -ENOMEM;
                        *filters = a;
                        a[(*n)++] = (KernelFilter) { .action = (KernelFilterAction) action };
                        action_token = actions[action];
                        state = WANT_SOURCE;
                        continue;
                }

                f = state == WANT_SOURCE ? &(*filters)[*n - 1] : &scratch;
                r = match_source(tok, f, &has_size, &file);
                if (r == 0)
                        return set_error_message(
                                -EINVAL, ret_error,
                                "'%s': neither an action (filter, start, stop) nor ADDR[/SIZE][@FILE] "
                                "with numbers in C notation and no spaces "
                                "(perf_event_parse_addr_filter: EINVAL)",
                                tok);
                if (state != WANT_SOURCE)
                        return set_error_message(
                                -EINVAL, ret_error,
                                "'%s': an address needs an action before it (filter, start or stop) "
                                "(perf_event_parse_addr_filter: EINVAL)",
                                tok);
                if (r == -ERANGE)
                        return set_error_message(-ERANGE, ret_error,
                                                 "'%s %s': a number does not fit 64 bits "
                                                 "(perf_event_parse_addr_filter, kstrtoul: ERANGE)",
                                                 action_token, tok);
                if (!has_size)
                        f->size = 0;
                state = WANT_ACTION;

                /* The filter is complete: the checks against itself and
                 * the event, in the kernel's order. */
                if (ev->before_5_18 && !file && ev->exclude_kernel)
                        return set_error_message(
                                -EINVAL, ret_error,
                                "'%s %s': kernels before 5.18 refuse address filters (no @FILE) on "
                                "an event that excludes the kernel "
                                "(perf_event_parse_addr_filter: EINVAL)",
                                action_token, tok);
                if (f->action == KERNEL_FILTER_FILTER && f->size == 0)
                        return set_error_message(
                                -EINVAL, ret_error,
                                "'%s %s': 'filter' needs a range of non-zero size (ADDR/SIZE) "
                                "(perf_event_parse_addr_filter: EINVAL)",
                                action_token, tok);
                if (file) {
                        struct stat st;

                        if (!ev->per_task)
                                return set_error_message(
                                        -EOPNOTSUPP, ret_error,
                                        "'%s %s': file-based filters (@%s) are refused on CPU-wide events: "
                                        "one object lies at different addresses in different processes "
                                        "(perf_event_parse_addr_filter: EOPNOTSUPP)",
                                        action_token, tok, file);
                        if (stat(file, &st) < 0) {
                                r = -errno;
                                return set_error_message(
                                        r, ret_error,
                                        "'%s %s': %s: %s (perf_event_parse_addr_filter, kern_path)",
                                        action_token, tok, file, strerror(-r));
                        }
                        if (!S_ISREG(st.st_mode))
                                return set_error_message(-EINVAL, ret_error,
                                                         "'%s %s': %s is not a regular file "
                                                         "(perf_event_parse_addr_filter: EINVAL)",
                                                         action_token, tok, file);
                        f->file = strdup(file);
                        if (!f->file)
                                return -ENOMEM;
                }
        }
        if (state != WANT_ACTION)
                return set_error_message(-EINVAL, ret_error,
                                         "'%s': the filter ends without its address "
                                         "(perf_event_parse_addr_filter: EINVAL)",
                                         action_token);
        return 0;
}

/* A filter as the kernel's grammar spells it, for messages. */
static const char *filter_string(const KernelFilter *f, char *buf, size_t l) {
        int k = snprintf(buf, l, "%s 0x%" PRIx64, kernel_filter_action_to_string(f->action), f->offset);

        if (f->size && k > 0 && (size_t) k < l)
                k += snprintf(buf + k, l - (size_t) k, "/0x%" PRIx64, f->size);
        if (f->file && k > 0 && (size_t) k < l)
                (void) snprintf(buf + k, l - (size_t) k, "@%s", f->file);
        return buf;
}

/* pt_event_addr_filters_validate(), after the whole string parsed. */
static int validate(const KernelFilter *filters, size_t n, const KernelFilterEvent *ev, char **ret_error) {
        for (size_t i = 0; i < n; i++) {
                const KernelFilter *f = &filters[i];
                char b[KERNEL_FILTER_MAX + 64];

                if (f->action == KERNEL_FILTER_START)
                        return set_error_message(
                                -EOPNOTSUPP, ret_error,
                                "'%s': Intel PT has no 'start' filters; use 'filter ADDR/SIZE' for "
                                "a range to trace (pt_event_addr_filters_validate: EOPNOTSUPP)",
                                filter_string(f, b, sizeof b));
                if (f->size == 0)
                        return set_error_message(
                                -EOPNOTSUPP, ret_error,
                                "'%s': Intel PT filters on ranges, a single address (size 0) is "
                                "refused; give ADDR/SIZE (pt_event_addr_filters_validate: "
                                "EOPNOTSUPP)",
                                filter_string(f, b, sizeof b));
                if (ev->before_5_18 && !f->file &&
                    (!kernel_half(f->offset) || !kernel_half(f->offset + f->size)))
                        return set_error_message(
                                -EINVAL, ret_error,
                                "'%s': kernels before 5.18 accept address filters without @FILE "
                                "only in the kernel (pt_event_addr_filters_validate, "
                                "valid_kernel_ip: EINVAL)",
                                filter_string(f, b, sizeof b));
                if (i + 1 > ev->nr_ranges)
                        return set_error_message(
                                -EOPNOTSUPP, ret_error,
                                "%zu filters: this intel_pt has %u address ranges "
                                "(nr_addr_filters) (pt_event_addr_filters_validate: EOPNOTSUPP)",
                                n, ev->nr_ranges);
        }
        return 0;
}

int kernel_filter_parse(const char *text, const KernelFilterEvent *ev, KernelFilter **ret, size_t *ret_n,
                        char **ret_error) {
        _cleanup_free_ char *copy = NULL;
        KernelFilter *filters = NULL;
        size_t n = 0, len;
        int r;

        assert(text);
        assert(ev);

        /* perf_event_set_filter(): strndup_user(arg, PAGE_SIZE), then
         * has_addr_filter(). */
        len = strnlen(text, KERNEL_FILTER_MAX);
        if (len >= KERNEL_FILTER_MAX)
                return set_error_message(
                        -EINVAL, ret_error,
                        "the filter string is longer than the kernel copies (%d bytes with its "
                        "NUL) (perf_event_set_filter, strndup_user: EINVAL)",
                        KERNEL_FILTER_MAX);
        if (ev->nr_ranges == 0)
                return set_error_message(-EINVAL, ret_error,
                                         "this intel_pt has no address filters (nr_addr_filters is 0) "
                                         "(perf_event_set_filter: EINVAL)");
        copy = strndup(text, len);
        if (!copy)
                return -ENOMEM;

        r = parse_tokens(copy, ev, &filters, &n, ret_error);
        if (r >= 0)
                r = validate(filters, n, ev, ret_error);
        if (r < 0) {
                kernel_filters_free(filters, n);
                return r;
        }
        *ret = filters;
        *ret_n = n;
        return 0;
}

bool kernel_filter_release_before_5_18(const char *release) {
        unsigned major, minor;

        if (!release || sscanf(release, "%u.%u", &major, &minor) != 2)
                return false;
        return major < 5 || (major == 5 && minor < 18);
}
