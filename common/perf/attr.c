/* SPDX-License-Identifier: MIT */

#include "common/perf/attr.h"
#include "common/perf/sys.h"

static const char *const feature_names[_TRACKING_FEATURE_MAX] = {
        [TRACKING_MMAP2] = "mmap2",
        [TRACKING_COMM_EXEC] = "comm_exec",
        [TRACKING_CONTEXT_SWITCH] = "context_switch",
        [TRACKING_KSYMBOL] = "ksymbol",
        [TRACKING_BPF_EVENT] = "bpf_event",
        [TRACKING_TEXT_POKE] = "text_poke",
        [TRACKING_CGROUP] = "cgroup",
        [TRACKING_NAMESPACES] = "namespaces",
        [TRACKING_BUILD_ID] = "build_id",
};

const char *tracking_feature_to_string(TrackingFeature f) {
        return f < _TRACKING_FEATURE_MAX ? feature_names[f] : NULL;
}

void tracking_features_all(TrackingFeatures *ret) {
        for (unsigned i = 0; i < _TRACKING_FEATURE_MAX; i++)
                ret->supported[i] = true;
}

static void base_attr(struct perf_event_attr *a) {
        memset(a, 0, sizeof(*a));
        a->size = sizeof(*a);
        a->type = PERF_TYPE_SOFTWARE;
        a->config = PERF_COUNT_SW_DUMMY;
        a->sample_period = 1;
        a->sample_type = PTRACED_SAMPLE_TYPE;
        a->sample_id_all = 1;
        a->disabled = 1;
        a->mmap = 1;
        a->comm = 1;
        a->task = 1;
}

static void set_feature(struct perf_event_attr *a, TrackingFeature f) {
        switch (f) {
        case TRACKING_MMAP2:
                a->mmap2 = 1;
                break;
        case TRACKING_COMM_EXEC:
                a->comm_exec = 1;
                break;
        case TRACKING_CONTEXT_SWITCH:
                a->context_switch = 1;
                break;
        case TRACKING_KSYMBOL:
                a->ksymbol = 1;
                break;
        case TRACKING_BPF_EVENT:
                a->bpf_event = 1;
                break;
        case TRACKING_TEXT_POKE:
                a->text_poke = 1;
                break;
        case TRACKING_CGROUP:
                a->cgroup = 1;
                break;
        case TRACKING_NAMESPACES:
                a->namespaces = 1;
                break;
        case TRACKING_BUILD_ID:
                /* build ids ride on MMAP2 records */
                a->mmap2 = 1;
                a->build_id = 1;
                break;
        default:
                break;
        }
}

static int try_open(struct perf_event_attr *a, int cpu) {
        int fd = sys_perf_event_open(a, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);

        /* Without the right to watch the whole CPU, watching ourselves still
         * tells whether the kernel knows the attr bit. */
        if (fd < 0 && (errno == EACCES || errno == EPERM))
                fd = sys_perf_event_open(a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        safe_close(fd);
        return 0;
}

int tracking_features_probe(int cpu, TrackingFeatures *ret) {
        struct perf_event_attr a;
        int r, off = 0;

        base_attr(&a);
        r = try_open(&a, cpu);
        if (r < 0)
                return r;

        for (unsigned f = 0; f < _TRACKING_FEATURE_MAX; f++) {
                base_attr(&a);
                set_feature(&a, f);
                r = try_open(&a, cpu);
                /* Unknown attr bits give EINVAL, an attr larger than the
                 * kernel's gives E2BIG; other errors (EACCES for text_poke
                 * without CAP_PERFMON...) also mean we cannot have it. */
                ret->supported[f] = r >= 0;
                if (r < 0)
                        off++;
        }
        return off;
}

void perf_attr_tracking(const TrackingFeatures *features, uint32_t wakeup_bytes, struct perf_event_attr *ret) {
        base_attr(ret);
        for (unsigned f = 0; f < _TRACKING_FEATURE_MAX; f++)
                if (features->supported[f])
                        set_feature(ret, f);
        if (wakeup_bytes > 0) {
                ret->watermark = 1;
                ret->wakeup_watermark = wakeup_bytes;
        }
}
