/* SPDX-License-Identifier: MIT */

/*
 * Address filters in the kernel's grammar, as kernel/events/core.c's
 * perf_event_parse_addr_filter() reads them: an action, then
 * ADDR[/SIZE][@FILE]; filters separated by spaces, commas or newlines;
 * numbers in C notation. Intel PT has "filter" (FilterEn ranges) and
 * "stop" (TraceStop ranges; perf's user syntax says "tracestop", taken
 * too), no "start" (arch/x86/events/intel/pt.c,
 * pt_event_addr_filters_validate(), refuses it). Every range here has a
 * size: the kernel wants one for "filter", and perf writes one for
 * "tracestop".
 */

#include "client/decode/input/input.h"
#include "common/basic/parse-util.h"
#include "common/basic/string-util.h"

#define SEPARATORS " ,\n\t"

static int parse_range(DecodeAddrFilter *f, const char *action, char *spec, char **ret_error) {
        char *at = strchr(spec, '@'), *slash;

        if (at) {
                *at++ = 0;
                if (*at != '/')
                        return set_error_message(-EINVAL, ret_error,
                                                 "'%s %s@%s': the file must be an absolute path", action, spec, at);
                f->file = strdup(at);
                if (!f->file)
                        return -ENOMEM;
        }
        slash = strchr(spec, '/');
        if (slash)
                *slash++ = 0;
        if (parse_uint64(spec, &f->start) < 0)
                return set_error_message(-EINVAL, ret_error, "'%s %s': the address must be a number", action, spec);
        if (!slash)
                return set_error_message(-EINVAL, ret_error,
                                         "'%s %s': a size must follow the address (ADDR/SIZE)", action, spec);
        if (parse_uint64(slash, &f->size) < 0 || f->size == 0)
                return set_error_message(-EINVAL, ret_error, "'%s %s/%s': the size must be a number above 0",
                                         action, spec, slash);
        if (!f->file && f->start + f->size - 1 < f->start)
                return set_error_message(-EINVAL, ret_error, "'%s %s/%s': the range wraps around", action, spec,
                                         slash);
        return 0;
}

int decode_input_add_addr_filters(DecodeInput *in, const char *text, char **ret_error) {
        _cleanup_free_ char *copy = strdup(text);
        char *save = NULL, *action;

        if (!copy)
                return -ENOMEM;
        for (action = strtok_r(copy, SEPARATORS, &save); action; action = strtok_r(NULL, SEPARATORS, &save)) {
                DecodeAddrFilter f = {};
                char *spec;
                int r;

                if (streq(action, "stop") || streq(action, "tracestop"))
                        f.stop = true;
                else if (!streq(action, "filter"))
                        return set_error_message(-EINVAL, ret_error,
                                                 "'%s': an address filter starts with filter, stop or tracestop "
                                                 "(Intel PT has no start filters)",
                                                 action);
                spec = strtok_r(NULL, SEPARATORS, &save);
                if (!spec)
                        return set_error_message(-EINVAL, ret_error, "'%s' needs ADDR/SIZE[@FILE]", action);
                if (in->n_addr_filters >= DECODE_ADDR_FILTERS_MAX)
                        return set_error_message(-E2BIG, ret_error,
                                                 "more than %u address filters: Intel PT has at most %u ranges",
                                                 DECODE_ADDR_FILTERS_MAX, DECODE_ADDR_FILTERS_MAX);
                r = parse_range(&f, action, spec, ret_error);
                if (r < 0) {
                        free(f.file);
                        return r;
                }
                in->addr_filters[in->n_addr_filters++] = f;
        }
        return 0;
}
