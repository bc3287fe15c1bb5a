/* SPDX-License-Identifier: MIT */

/*
 * Type=unit against a fake systemd: a private dbus-daemon stands in for the
 * system bus ($DBUS_SYSTEM_BUS_ADDRESS), a child process owns
 * org.freedesktop.systemd1 there, answers Subscribe() and
 * ListUnitsByPatterns() and then sends the PropertiesChanged signals
 * systemd sends when units fail or miss their watchdog. The manager runs
 * here on the emulated PMU; the bundles say which unit and why. Then the
 * fake "systemd" is replaced by another (a re-exec): the watcher subscribes
 * again and sees the new one's failures.
 */

#include <dirent.h>
#include <json-c/json.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "common/basic/fileio.h"
#include "common/basic/log.h"
#include "common/bundle/bundle.h"
#include "daemon/manager/manager.h"
#include "daemon/trigger/set.h"
#include "private-bus.h"
#include "sim-test-source.h"
#include "test.h"

#define N_CPUS 2

static uint64_t mono_ms(void) {
        return now_nsec(CLOCK_MONOTONIC) / NSEC_PER_MSEC;
}

/* ---- the fake systemd ---- */

typedef struct Fake {
        sd_bus *bus;
        sd_event *event;
        int generation; /* 1: the first systemd, 2: after the "re-exec" */
        bool subscribed, listed;
        int step;
} Fake;

static int method_subscribe(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        Fake *f = userdata;
        f->subscribed = true;
        return sd_bus_reply_method_return(m, NULL);
}

static int append_unit(sd_bus_message *reply, const char *name, const char *active) {
        _cleanup_free_ char *path = NULL;
        int r = sd_bus_path_encode("/org/freedesktop/systemd1/unit", name, &path);
        if (r < 0)
                return r;
        return sd_bus_message_append(reply, "(ssssssouso)", name, "", "loaded", active, active, "", path, 0u,
                                     "", "/");
}

static int method_list(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        Fake *f = userdata;
        int r;

        r = sd_bus_message_new_method_return(m, &reply);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "(ssssssouso)");
        /* broken.service failed before anyone looked. */
        if (r >= 0)
                r = append_unit(reply, "broken.service", f->generation == 1 ? "failed" : "active");
        if (r >= 0)
                r = append_unit(reply, "myapp.service", "active");
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        f->listed = true;
        return sd_bus_send(NULL, reply, NULL);
}

static const sd_bus_vtable manager_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD("Subscribe", "", "", method_subscribe, 0),
        SD_BUS_METHOD("ListUnitsByPatterns", "asas", "a(ssssssouso)", method_list, 0),
        SD_BUS_VTABLE_END,
};

static int emit(Fake *f, const char *unit, const char *iface, const char *prop, const char *value) {
        _cleanup_free_ char *path = NULL;
        int r = sd_bus_path_encode("/org/freedesktop/systemd1/unit", unit, &path);
        if (r < 0)
                return r;
        return sd_bus_emit_signal(f->bus, path, "org.freedesktop.DBus.Properties", "PropertiesChanged",
                                  "sa{sv}as", iface, 1, prop, "s", value, 0);
}

#define UNIT "org.freedesktop.systemd1.Unit"
#define SERVICE "org.freedesktop.systemd1.Service"

/* What happens to the units, one step every 100 ms once subscribed. */
static int on_step(sd_event_source *s, uint64_t usec, void *userdata) {
        Fake *f = userdata;

        if (f->subscribed && f->listed) {
                if (f->generation == 1)
                        switch (f->step++) {
                        case 0: /* old news: no snapshot */
                                (void) emit(f, "broken.service", SERVICE, "Result", "exit-code");
                                (void) emit(f, "broken.service", UNIT, "ActiveState", "failed");
                                break;
                        case 1: /* not watched: no snapshot */
                                (void) emit(f, "other.service", SERVICE, "Result", "watchdog");
                                (void) emit(f, "other.service", UNIT, "ActiveState", "failed");
                                break;
                        case 2: /* the watchdog fires: one snapshot */
                                (void) emit(f, "myapp.service", SERVICE, "Result", "watchdog");
                                (void) emit(f, "myapp.service", UNIT, "ActiveState", "deactivating");
                                break;
                        case 3: /* the same incident, repeated: nothing new */
                                (void) emit(f, "myapp.service", SERVICE, "Result", "watchdog");
                                (void) emit(f, "myapp.service", UNIT, "ActiveState", "failed");
                                break;
                        case 4: /* a worker fails with an exit code: one snapshot */
                                (void) emit(f, "myapp-worker.service", UNIT, "ActiveState", "active");
                                (void) emit(f, "myapp-worker.service", SERVICE, "Result", "exit-code");
                                (void) emit(f, "myapp-worker.service", UNIT, "ActiveState", "failed");
                                break;
                        }
                else
                        switch (f->step++) {
                        case 0: /* after the re-exec myapp runs again, and its watchdog fires again */
                                (void) emit(f, "myapp.service", SERVICE, "Result", "watchdog");
                                (void) emit(f, "myapp.service", UNIT, "ActiveState", "failed");
                                break;
                        }
        }
        (void) sd_event_source_set_time_relative(s, 100 * USEC_PER_MSEC);
        return sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
}

static _noreturn_ void fake_systemd(int generation, int ready_fd) {
        Fake f = { .generation = generation };
        sd_event_source *step = NULL;

        (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (sd_event_new(&f.event) < 0 || sd_bus_open_system(&f.bus) < 0 ||
            sd_bus_add_object_vtable(f.bus, NULL, "/org/freedesktop/systemd1",
                                     "org.freedesktop.systemd1.Manager", manager_vtable, &f) < 0 ||
            sd_bus_request_name(f.bus, "org.freedesktop.systemd1", 0) < 0 ||
            sd_bus_attach_event(f.bus, f.event, 0) < 0 ||
            sd_event_add_time_relative(f.event, &step, CLOCK_MONOTONIC, 100 * USEC_PER_MSEC, 0, on_step,
                                       &f) < 0)
                _exit(2);
        (void) !write(ready_fd, "r", 1);
        close(ready_fd);
        (void) sd_event_loop(f.event);
        _exit(0);
}

static pid_t start_fake(int generation) {
        int p[2];
        char c;
        pid_t pid;

        ASSERT_EQ(pipe(p), 0);
        pid = fork();
        ASSERT_TRUE(pid >= 0);
        if (pid == 0) {
                close(p[0]);
                fake_systemd(generation, p[1]);
        }
        close(p[1]);
        ASSERT_EQ(read(p[0], &c, 1), 1);
        close(p[0]);
        return pid;
}

/* ---- the test ---- */

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

static char **bundle_reasons(const char *dir) {
        _cleanup_strv_free_ char **l = calloc(1, sizeof(char *));
        DIR *d = opendir(dir);
        struct dirent *de;

        ASSERT_NOT_NULL(d);
        while ((de = readdir(d))) {
                _cleanup_(bundle_reader_freep) BundleReader *r = NULL;
                _cleanup_free_ char *path = NULL, *error = NULL;
                const BundleManifest *mf;
                struct json_object *v;
                size_t n = strlen(de->d_name);

                if (n < 5 || !streq(de->d_name + n - 4, ".tar") || de->d_name[0] == '.')
                        continue;
                ASSERT_TRUE(asprintf(&path, "%s/%s", dir, de->d_name) > 0);
                ASSERT_OK(bundle_reader_open(path, NULL, &r, &error));
                mf = bundle_reader_manifest(r);
                printf("bundle: %s %s\n", mf->trigger.reason,
                       json_object_to_json_string_ext(mf->trigger.details, JSON_C_TO_STRING_PLAIN));
                ASSERT_TRUE(streq(mf->trigger.source, "unit:wd") || streq(mf->trigger.source, "unit:any"));
                ASSERT_TRUE(json_object_object_get_ex(mf->trigger.details, "unit", &v));
                ASSERT_TRUE(json_object_object_get_ex(mf->trigger.details, "result", &v));
                ASSERT_OK(strv_extend(&l, mf->trigger.reason));
        }
        closedir(d);
        qsort(l, strv_length(l), sizeof(char *), cmp_str);
        return TAKE_PTR(l);
}

static void run_until_bundles(Manager *m, uint64_t n, unsigned timeout_ms, unsigned settle_ms) {
        uint64_t end = mono_ms() + timeout_ms;
        SnapshotStats st;

        for (;;) {
                manager_get_stats(m, &st);
                if (st.bundles_written >= n || mono_ms() >= end)
                        break;
                ASSERT_OK(sd_event_run(manager_get_event(m), 10 * USEC_PER_MSEC));
        }
        end = mono_ms() + settle_ms;
        while (mono_ms() < end)
                ASSERT_OK(sd_event_run(manager_get_event(m), 10 * USEC_PER_MSEC));
}

static void test_unit(void) {
        char dir[] = "/tmp/test-trigger-unit-XXXXXX", bundles[128];
        _cleanup_strv_free_ char **warnings = NULL, **reasons = NULL;
        _cleanup_free_ char *error = NULL;
        _cleanup_(manager_freep) Manager *m = NULL;
        PtracedConfig c;
        pid_t bus, fake;

        if (geteuid() != 0)
                test_skip("needs root: the emulated CPUs' side-band comes from system-wide perf events");
        if (system("command -v dbus-daemon >/dev/null 2>&1") != 0)
                test_skip("needs dbus-daemon (apt-get install dbus-daemon) for a private bus");

        ASSERT_NOT_NULL(mkdtemp(dir));
        snprintf(bundles, sizeof bundles, "%s/bundles", dir);
        bus = private_bus_start(dir);
        fake = start_fake(1);

        ptraced_config_init(&c);
        ASSERT_OK(config_parse_text(ptraced_config_items, ptraced_config_templates, "test.conf",
                                    "[Trigger:wd]\nType=unit\nUnits=myapp*.service broken.service\n"
                                    "Result=watchdog\nMinIntervalSec=0\n"
                                    "[Trigger:any]\nType=unit\nUnits=myapp-worker.service broken.service\n"
                                    "MinIntervalSec=0\n",
                                    &c, &warnings, &error));
        ASSERT_OK(trigger_config_check_all(c.trigger_list, &warnings));
        ASSERT_EQ(strv_length(warnings), 0);
        c.directory = strdup(bundles);
        ASSERT_TRUE(asprintf(&c.control.socket, "%s/io.ptraced", dir) > 0);
        c.buffer_size = 64 * 1024;
        c.source = TRACE_SOURCE_SIM;
        c.triggers.interval = 0;
        c.triggers.warmup = 0;
        c.triggers.duplicate_window = 0;
        manager_block_signals();
        ASSERT_OK(manager_new(&c, sim_test_backend_new(N_CPUS, 4 << 20, NULL), &m));
        ptraced_config_done(&c);
        ASSERT_OK(manager_start(m, 0));

        /* The watchdog of myapp.service and the failure of the worker; not
         * broken.service (failed before), not other.service, and the repeat
         * of myapp's incident not twice. */
        run_until_bundles(m, 2, 20000, 1000);
        reasons = bundle_reasons(bundles);
        ASSERT_EQ(strv_length(reasons), 2);
        ASSERT_STREQ(reasons[0], "unit-failed:myapp-worker.service");
        ASSERT_STREQ(reasons[1], "unit-watchdog:myapp.service");
        strv_free(reasons);

        /* systemd re-executes: a new owner of the name. The watcher
         * subscribes again, reads the units again (myapp is active again,
         * so armed) and sees its watchdog fire once more. */
        ASSERT_EQ(kill(fake, SIGKILL), 0);
        ASSERT_EQ(waitpid(fake, NULL, 0), fake);
        fake = start_fake(2);
        run_until_bundles(m, 3, 20000, 500);
        reasons = bundle_reasons(bundles);
        ASSERT_EQ(strv_length(reasons), 3);
        ASSERT_STREQ(reasons[2], "unit-watchdog:myapp.service");

        m = manager_free(m);
        (void) kill(fake, SIGKILL);
        (void) kill(bus, SIGKILL);
        (void) waitpid(fake, NULL, 0);
        (void) waitpid(bus, NULL, 0);
        ASSERT_OK(rm_rf(dir));
}

/* No system bus: the unit triggers watch nothing, and the status line and
 * the trigger's info say so rather than counting them as running. */
static void test_no_bus(void) {
        char dir[] = "/tmp/test-trigger-unit-XXXXXX";
        _cleanup_strv_free_ char **warnings = NULL;
        _cleanup_free_ char *error = NULL, *address = NULL;
        _cleanup_(manager_freep) Manager *m = NULL;
        TriggerInfo info;
        PtracedConfig c;

        if (geteuid() != 0)
                test_skip("needs root: the emulated CPUs' side-band comes from system-wide perf events");
        ASSERT_NOT_NULL(mkdtemp(dir));
        ASSERT_TRUE(asprintf(&address, "unix:path=%s/no-bus-here", dir) > 0);
        ASSERT_EQ(setenv("DBUS_SYSTEM_BUS_ADDRESS", address, 1), 0);

        ptraced_config_init(&c);
        ASSERT_OK(config_parse_text(ptraced_config_items, ptraced_config_templates, "test.conf",
                                    "[Trigger:myapp]\nType=unit\nUnits=myapp.service\n", &c, &warnings, &error));
        ASSERT_OK(trigger_config_check_all(c.trigger_list, &warnings));
        ASSERT_TRUE(asprintf(&c.directory, "%s/bundles", dir) > 0);
        ASSERT_TRUE(asprintf(&c.control.socket, "%s/io.ptraced", dir) > 0);
        c.buffer_size = 64 * 1024;
        c.source = TRACE_SOURCE_SIM;
        manager_block_signals();
        ASSERT_OK(manager_new(&c, sim_test_backend_new(N_CPUS, 4 << 20, NULL), &m));
        ptraced_config_done(&c);
        ASSERT_OK(manager_start(m, 0));
        for (int i = 0; i < 20; i++)
                ASSERT_OK(sd_event_run(manager_get_event(m), 10 * USEC_PER_MSEC));

        printf("status: %s\n", manager_status_text(m));
        ASSERT_CONTAINS(manager_status_text(m), "0 triggers (1 not running), myapp inactive: no system bus");
        ASSERT_OK(trigger_set_info(manager_get_triggers(m), 0, &info));
        ASSERT_FALSE(info.running);
        ASSERT_STREQ(info.error, "inactive: no system bus");

        m = manager_free(m);
        ASSERT_OK(rm_rf(dir));
}

RUN_TESTS(TEST(test_unit), TEST(test_no_bus));
