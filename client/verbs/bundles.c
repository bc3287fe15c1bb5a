/* SPDX-License-Identifier: MIT */

/*
 * Bundles as `ptctl list` and `ptctl info` see them. Reading works without
 * the daemon: the bundles directory is read directly, with the caller's
 * own permissions. A bundle the caller may not read is shown as
 * inaccessible rather than skipped, so nobody wonders where it went.
 */

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>

#include "client/verbs/bundles.h"
#include "common/basic/parse-util.h"
#include "common/bundle/vacuum.h"

static const char *const state_table[_BUNDLE_STATE_MAX] = {
        [BUNDLE_STATE_PRESENT] = "present",
        [BUNDLE_STATE_TRUNCATED] = "truncated",
        [BUNDLE_STATE_INCOMPLETE] = "incomplete",
        [BUNDLE_STATE_INACCESSIBLE] = "inaccessible",
        [BUNDLE_STATE_CORRUPT] = "corrupt",
};

const char *bundle_state_to_string(BundleState s) {
        return s >= 0 && s < _BUNDLE_STATE_MAX ? state_table[s] : "unknown";
}

BundleState bundle_state_classify(int open_r, const BundleManifest *m) {
        if (open_r == -EACCES || open_r == -EPERM)
                return BUNDLE_STATE_INACCESSIBLE;
        if (open_r < 0 || !m)
                return BUNDLE_STATE_INCOMPLETE;
        if (bundle_manifest_has_cpu_errors(m))
                return BUNDLE_STATE_INCOMPLETE;
        if (bundle_manifest_is_truncated(m))
                return BUNDLE_STATE_TRUNCATED;
        return BUNDLE_STATE_PRESENT;
}

static void row_done(BundleRow *r) {
        free(r->path);
        free(r->file);
        free(r->error);
        free(r->id);
        free(r->reason);
        free(r->source);
}

void bundle_rows_free(BundleRow *rows, size_t n) {
        for (size_t i = 0; i < n; i++)
                row_done(&rows[i]);
        free(rows);
}

int bundle_row_load(const char *path, BundleRow *ret) {
        _cleanup_(bundle_reader_freep) BundleReader *reader = NULL;
        _cleanup_free_ char *error = NULL;
        BundleRow row = {};
        const BundleManifest *m = NULL;
        const char *slash = strrchr(path, '/');
        struct stat st;
        int r;

        row.path = strdup(path);
        row.file = strdup(slash ? slash + 1 : path);
        if (!row.path || !row.file) {
                row_done(&row);
                return -ENOMEM;
        }
        if (stat(path, &st) < 0) {
                r = -errno;
                row_done(&row);
                return r;
        }
        row.file_size = (uint64_t) st.st_size;
        row.time_usec = (uint64_t) st.st_mtim.tv_sec * USEC_PER_SEC + (uint64_t) st.st_mtim.tv_nsec / 1000;

        r = bundle_reader_open(path, NULL, &reader, &error);
        if (r == -ENOMEM) {
                row_done(&row);
                return r;
        }
        if (r >= 0)
                m = bundle_reader_manifest(reader);
        row.state = bundle_state_classify(r, m);
        if (r < 0) {
                row.error = TAKE_PTR(error);
                if (!row.error)
                        row.error = strdup(strerror(-r));
        }
        if (m) {
                if (m->trigger.realtime_usec > 0)
                        row.time_usec = m->trigger.realtime_usec;
                row.id = strdup(m->id);
                row.reason = strdup(m->trigger.reason);
                row.source = strdup(m->trigger.source);
                row.cpus_total = (unsigned) m->n_cpus;
                for (size_t i = 0; i < m->n_cpus; i++)
                        if (m->cpus[i].member)
                                row.cpus_with_data++;
                /* The recorded window, as ptctl info shows it: the time every
                 * CPU with data covers (issue 18: list showed an estimate). */
                row.lookback_ns = m->window.valid ? m->window.end_time - m->window.start_time : 0;
                row.simulated = m->simulated;
                if (!row.id || !row.reason || !row.source) {
                        row_done(&row);
                        return -ENOMEM;
                }
                if (row.state == BUNDLE_STATE_INCOMPLETE && !row.error)
                        row.error = strdup("a CPU's trace is missing (see ptctl info)");
        }
        *ret = row;
        return 0;
}

static int cmp_row(const void *a, const void *b) {
        const BundleRow *x = a, *y = b;
        if (x->time_usec != y->time_usec)
                return x->time_usec < y->time_usec ? -1 : 1;
        return strcmp(x->file, y->file);
}

int bundle_rows_load(const char *dir, BundleRow **ret, size_t *ret_n, char **ret_error) {
        BundleRow *rows = NULL;
        size_t n = 0, allocated = 0;
        struct dirent *de;
        DIR *d;
        int r = 0;

        d = opendir(dir);
        if (!d) {
                r = -errno;
                if (ret_error && asprintf(ret_error, "cannot read the bundle directory %s: %s", dir, strerror(-r)) < 0)
                        *ret_error = NULL;
                return r;
        }
        while ((de = readdir(d))) {
                _cleanup_free_ char *path = NULL;
                struct stat st;

                if (!bundle_file_name_is_bundle(de->d_name))
                        continue;
                if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
                        continue;
                if (asprintf(&path, "%s/%s", dir, de->d_name) < 0) {
                        r = -ENOMEM;
                        break;
                }
                if (n >= allocated) {
                        size_t k = MAX(allocated * 2, (size_t) 16);
                        BundleRow *v = reallocarray(rows, k, sizeof *v);
                        if (!v) {
                                r = -ENOMEM;
                                break;
                        }
                        rows = v;
                        allocated = k;
                }
                r = bundle_row_load(path, &rows[n]);
                if (r == -ENOENT) { /* vacuumed while we looked */
                        r = 0;
                        continue;
                }
                if (r < 0)
                        break;
                n++;
        }
        closedir(d);
        if (r < 0) {
                bundle_rows_free(rows, n);
                return r;
        }
        if (n > 0)
                qsort(rows, n, sizeof *rows, cmp_row);
        *ret = rows;
        *ret_n = n;
        return 0;
}

static usec_t local_midnight(usec_t now, int days_back) {
        time_t t = (time_t) (now / USEC_PER_SEC);
        struct tm tm;

        localtime_r(&t, &tm);
        tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
        tm.tm_mday -= days_back;
        tm.tm_isdst = -1;
        return (usec_t) mktime(&tm) * USEC_PER_SEC;
}

int ptctl_parse_timestamp(const char *s, usec_t now, usec_t *ret) {
        static const char *const formats[] = {
                "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M", "%Y-%m-%d",
        };
        size_t l = strlen(s);
        usec_t d;

        if (streq(s, "now")) {
                *ret = now;
                return 0;
        }
        if (streq(s, "today")) {
                *ret = local_midnight(now, 0);
                return 0;
        }
        if (streq(s, "yesterday")) {
                *ret = local_midnight(now, 1);
                return 0;
        }
        if (s[0] == '@') {
                uint64_t sec;
                if (parse_uint64(s + 1, &sec) < 0 || sec > UINT64_MAX / USEC_PER_SEC)
                        return -EINVAL;
                *ret = sec * USEC_PER_SEC;
                return 0;
        }
        if (s[0] == '-' && parse_duration(s + 1, &d) >= 0) {
                *ret = now > d ? now - d : 0;
                return 0;
        }
        if (l > 4 && streq(s + l - 4, " ago")) {
                _cleanup_free_ char *span = strndup(s, l - 4);
                if (!span)
                        return -ENOMEM;
                if (parse_duration(span, &d) < 0)
                        return -EINVAL;
                *ret = now > d ? now - d : 0;
                return 0;
        }
        for (size_t i = 0; i < ELEMENTSOF(formats); i++) {
                struct tm tm = {};
                const char *end = strptime(s, formats[i], &tm);
                time_t t;
                if (!end || *end)
                        continue;
                tm.tm_isdst = -1;
                t = mktime(&tm);
                if (t == (time_t) -1)
                        return -EINVAL;
                *ret = (usec_t) t * USEC_PER_SEC;
                return 0;
        }
        /* A time of day alone means today. */
        {
                time_t t = (time_t) (now / USEC_PER_SEC);
                struct tm tm;
                const char *end;

                localtime_r(&t, &tm);
                tm.tm_sec = 0;
                end = strptime(s, "%H:%M:%S", &tm);
                if (!end || *end)
                        end = strptime(s, "%H:%M", &tm);
                if (end && !*end) {
                        tm.tm_isdst = -1;
                        t = mktime(&tm);
                        if (t == (time_t) -1)
                                return -EINVAL;
                        *ret = (usec_t) t * USEC_PER_SEC;
                        return 0;
                }
        }
        return -EINVAL;
}

void fputs_escaped(FILE *f, const char *s, size_t max) {
        _cleanup_free_ char *e = escape_string(s ?: "", max);
        fputs(e ?: "?", f);
}
