/* SPDX-License-Identifier: MIT */

/*
 * The control server in process, on the emulated PMU, over a real Unix
 * socket in a temporary directory: every method and every error, snapshot
 * with and without wait, coalescing of pipelined requests, governance
 * refusals with retry_after, permissions by SO_PEERCRED (a child process
 * that drops to nobody), hostile clients (malformed, oversized, slow,
 * too many, vanishing), and the perf-style FIFO pair.
 *
 * The test is single-threaded: it sends with the common client, then runs
 * the daemon's event loop until the reply is there.
 */

#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "common/basic/fileio.h"
#include "common/control/protocol.h"
#include "common/control/varlink-client.h"
#include "daemon/control/methods.h"
#include "daemon/control/server.h"
#include "daemon/manager/manager.h"
#include "sim-test-source.h"
#include "test.h"

typedef struct Fixture {
        char dir[64];
        char socket[128];
        Manager *m;
        ControlServer *server;
        sd_event *event;
} Fixture;

typedef void (*Tweak)(PtracedConfig *c, const char *dir);

static void fixture_start(Fixture *f, Tweak tweak) {
        PtracedConfig c;
        char path[256];

        if (geteuid() != 0)
                test_skip("needs root: the emulated CPUs' side-band comes from real system-wide perf events");

        *f = (Fixture){};
        strcpy(f->dir, "/tmp/test-control-XXXXXX");
        ASSERT_NOT_NULL(mkdtemp(f->dir));
        ASSERT_OK(chmod(f->dir, 0755)); /* the unprivileged child must reach the socket */
        snprintf(f->socket, sizeof f->socket, "%s/io.ptraced", f->dir);

        ptraced_config_init(&c);
        c.source = TRACE_SOURCE_SIM;
        c.buffer_size = 64 * 1024;
        snprintf(path, sizeof path, "%s/bundles", f->dir);
        c.directory = strdup(path);
        c.image_budget = 4096; /* keep bundles small: images are not what is tested */
        c.control.socket = strdup(f->socket);
        c.triggers.warmup = 0;
        c.triggers.duplicate_window = 0;
        if (tweak)
                tweak(&c, f->dir);

        manager_block_signals();
        ASSERT_OK(manager_new(&c, sim_test_backend_new(2, 8 << 20, NULL), &f->m));
        ASSERT_OK(manager_start(f->m, 0));
        f->event = manager_get_event(f->m);
        f->server = manager_get_control(f->m); /* the manager's */
        ptraced_config_done(&c);
}

static void fixture_stop(Fixture *f) {
        /* The manager answers what is due, then frees its control server. */
        f->m = manager_free(f->m);
        f->server = NULL;
        ASSERT_OK(rm_rf(f->dir));
}

static void run_for(Fixture *f, usec_t t) {
        usec_t end = now_usec(CLOCK_MONOTONIC) + t;
        while (now_usec(CLOCK_MONOTONIC) < end)
                ASSERT_OK(sd_event_run(f->event, 5 * USEC_PER_MSEC));
}

static VarlinkClient *client(Fixture *f) {
        VarlinkClient *c = NULL;
        ASSERT_OK(varlink_client_connect(f->socket, &c));
        return c;
}

/* Run the loop until a reply (or EOF) arrives; returns receive's result. */
static int receive(Fixture *f, VarlinkClient *c, VarlinkReply *ret) {
        _cleanup_free_ char *error = NULL;
        for (int i = 0; i < 2000; i++) {
                int r = varlink_client_receive(c, 0, ret, &error);
                if (r != -ETIMEDOUT)
                        return r;
                ASSERT_OK(sd_event_run(f->event, 5 * USEC_PER_MSEC));
        }
        test_fail("no reply within 10 s");
}

static int call(Fixture *f, VarlinkClient *c, const char *method, const char *params, VarlinkReply *ret) {
        struct json_object *p = params ? json_tokener_parse(params) : NULL;
        int r;

        ASSERT_TRUE(!params || p);
        r = varlink_client_send(c, method, p, 0, 5 * USEC_PER_SEC);
        if (p)
                json_object_put(p);
        /* A refused connection has its answer waiting even when sending failed. */
        if (r < 0 && r != -EPIPE && r != -ECONNRESET)
                return r;
        return receive(f, c, ret);
}

static void expect_error(Fixture *f, VarlinkClient *c, const char *method, const char *params, const char *error,
                         const char *field, const char *value) {
        VarlinkReply r;

        ASSERT_OK(call(f, c, method, params, &r));
        ASSERT_STREQ(r.error, error);
        if (field) {
                struct json_object *v = json_object_object_get(r.parameters, field);
                ASSERT_NOT_NULL(v);
                if (value)
                        ASSERT_CONTAINS(json_object_get_string(v), value);
        }
        varlink_reply_done(&r);
}

static const char *str(const VarlinkReply *r, const char *key) {
        struct json_object *v = json_object_object_get(r->parameters, key);
        return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

static int64_t num(const VarlinkReply *r, const char *key) {
        struct json_object *v = json_object_object_get(r->parameters, key);
        ASSERT_TRUE(v && json_object_is_type(v, json_type_int));
        return json_object_get_int64(v);
}

/* ---- tests ---- */

/* Every method of the protocol has exactly one handler, and every handler
 * serves a method of the protocol: a method added to one table but not
 * the other fails here (and the daemon refuses to start). */
static void test_dispatch_table(void) {
        _cleanup_free_ char *error = NULL;
        size_t n_protocol = 0, n_handlers = 0;
        int r;

        r = control_methods_check(&error);
        if (r < 0)
                test_fail("%s", error);
        for (const ProtocolMethod *p = protocol_methods; p->name; p++) {
                const ControlMethod *m = control_method_find(p->name);
                ASSERT_NOT_NULL(m);
                ASSERT_NOT_NULL(m->handler);
                n_protocol++;
        }
        for (const ControlMethod *m = control_methods; m->name; m++)
                n_handlers++;
        ASSERT_EQ(n_handlers, n_protocol);
}

static void test_introspection(void) {
        Fixture f;
        VarlinkReply r;

        fixture_start(&f, NULL);
        _cleanup_(varlink_client_freep) VarlinkClient *c = client(&f);

        ASSERT_OK(call(&f, c, VARLINK_METHOD_GET_INFO, NULL, &r));
        ASSERT_NULL(r.error);
        ASSERT_STREQ(str(&r, "product"), "ptraced");
        ASSERT_STREQ(str(&r, "version"), PACKAGE_VERSION);
        struct json_object *ifs = json_object_object_get(r.parameters, "interfaces");
        ASSERT_EQ(json_object_array_length(ifs), 2);
        ASSERT_STREQ(json_object_get_string(json_object_array_get_idx(ifs, 1)), "io.ptraced");
        varlink_reply_done(&r);

        ASSERT_OK(call(&f, c, VARLINK_METHOD_GET_INTERFACE_DESCRIPTION, "{\"interface\":\"io.ptraced\"}", &r));
        ASSERT_CONTAINS(str(&r, "description"), "method Snapshot(reason: ?string, wait: ?bool)");
        ASSERT_CONTAINS(str(&r, "description"), "error RateLimited");
        varlink_reply_done(&r);
        ASSERT_OK(call(&f, c, VARLINK_METHOD_GET_INTERFACE_DESCRIPTION, "{\"interface\":\"org.varlink.service\"}",
                       &r));
        ASSERT_CONTAINS(str(&r, "description"), "interface org.varlink.service");
        varlink_reply_done(&r);
        expect_error(&f, c, VARLINK_METHOD_GET_INTERFACE_DESCRIPTION, "{\"interface\":\"io.example\"}",
                     VARLINK_ERROR_INTERFACE_NOT_FOUND, "interface", "io.example");
        fixture_stop(&f);
}

static void test_call_errors(void) {
        Fixture f;
        VarlinkReply r;

        fixture_start(&f, NULL);
        _cleanup_(varlink_client_freep) VarlinkClient *c = client(&f);

        expect_error(&f, c, "io.ptraced.Frobnicate", NULL, VARLINK_ERROR_METHOD_NOT_FOUND, "method",
                     "io.ptraced.Frobnicate");
        expect_error(&f, c, "com.example.Thing", NULL, VARLINK_ERROR_INTERFACE_NOT_FOUND, "interface", "com.example");
        expect_error(&f, c, PTRACED_METHOD_SNAPSHOT, "{\"reason\":5}", PTRACED_ERROR_INVALID_PARAMETER, "parameter",
                     "reason");
        expect_error(&f, c, PTRACED_METHOD_SNAPSHOT, "{\"reason\":\"x\",\"wait\":1}", PTRACED_ERROR_INVALID_PARAMETER,
                     "message", "wait must be true or false");
        expect_error(&f, c, PTRACED_METHOD_STATUS, "{\"all\":true}", PTRACED_ERROR_INVALID_PARAMETER, "parameter",
                     "all");
        expect_error(&f, c, PTRACED_METHOD_GET_SNAPSHOT, "{}", PTRACED_ERROR_INVALID_PARAMETER, "parameter",
                     "pending");
        expect_error(&f, c, PTRACED_METHOD_GET_SNAPSHOT, "{\"pending\":\"0123456789abcdef0123456789abcdef\"}",
                     PTRACED_ERROR_NO_SUCH_SNAPSHOT, "message", "unknown");
        expect_error(&f, c, VARLINK_METHOD_GET_INTERFACE_DESCRIPTION, "{}", VARLINK_ERROR_INVALID_PARAMETER,
                     "parameter", "interface");

        /* upgrade is not offered. */
        ASSERT_OK(varlink_client_send(c, PTRACED_METHOD_STATUS, NULL, VARLINK_CALL_UPGRADE, USEC_PER_SEC));
        ASSERT_OK(receive(&f, c, &r));
        ASSERT_STREQ(r.error, VARLINK_ERROR_INVALID_PARAMETER);
        ASSERT_STREQ(str(&r, "parameter"), "upgrade");
        varlink_reply_done(&r);

        /* A oneway call is answered by nothing: the next reply is the next call's. */
        ASSERT_OK(varlink_client_send(c, VARLINK_METHOD_GET_INFO, NULL, VARLINK_CALL_ONEWAY, USEC_PER_SEC));
        ASSERT_OK(call(&f, c, PTRACED_METHOD_STATUS, NULL, &r));
        ASSERT_NULL(r.error);
        ASSERT_NOT_NULL(str(&r, "state"));
        varlink_reply_done(&r);

        /* The connection survived all of that. */
        ASSERT_OK(call(&f, c, VARLINK_METHOD_GET_INFO, NULL, &r));
        ASSERT_NULL(r.error);
        varlink_reply_done(&r);
        fixture_stop(&f);
}

/* Raw bytes on a fresh connection; returns the first reply's error. */
static void expect_raw(Fixture *f, const void *data, size_t size, const char *error, const char *message) {
        _cleanup_(varlink_client_freep) VarlinkClient *c = client(f);
        VarlinkReply r;

        ASSERT_EQ(send(varlink_client_fd(c), data, size, MSG_NOSIGNAL), (ssize_t) size);
        ASSERT_OK(receive(f, c, &r));
        ASSERT_STREQ(r.error, error);
        if (message)
                ASSERT_CONTAINS(str(&r, "message"), message);
        varlink_reply_done(&r);
        /* Then the daemon closes the connection. */
        ASSERT_ERROR(receive(f, c, &r), ECONNRESET);
}

static void test_hostile_messages(void) {
        ControlStats st;
        Fixture f;

        fixture_start(&f, NULL);
        expect_raw(&f, "not json", 9, PTRACED_ERROR_PROTOCOL, "not valid JSON");
        expect_raw(&f, "", 1, PTRACED_ERROR_PROTOCOL, "not valid JSON");
        expect_raw(&f, "[]", 3, PTRACED_ERROR_PROTOCOL, "must be a JSON object");
        expect_raw(&f, "{\"method\":\"x\"}", 15, PTRACED_ERROR_PROTOCOL, "\"interface.Method\"");
        expect_raw(&f, "{\"method\":\"io.ptraced.Status\",\"parameters\":7}", 46, PTRACED_ERROR_PROTOCOL,
                   "\"parameters\" must be an object");

        /* Over the size limit, with no NUL in sight. */
        size_t n = VARLINK_CALL_MAX + 4096;
        _cleanup_free_ char *big = malloc(n);
        memset(big, ' ', n);
        {
                _cleanup_(varlink_client_freep) VarlinkClient *c = client(&f);
                VarlinkReply r;
                size_t sent = 0;
                /* Send what the daemon takes; it stops reading at the limit. */
                for (int i = 0; i < 400 && sent < n; i++) {
                        ssize_t k = send(varlink_client_fd(c), big + sent, n - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
                        if (k > 0)
                                sent += (size_t) k;
                        ASSERT_OK(sd_event_run(f.event, 5 * USEC_PER_MSEC));
                }
                ASSERT_OK(receive(&f, c, &r));
                ASSERT_STREQ(r.error, PTRACED_ERROR_MESSAGE_TOO_LARGE);
                ASSERT_EQ(num(&r, "limit"), VARLINK_CALL_MAX);
                varlink_reply_done(&r);
                ASSERT_ERROR(receive(&f, c, &r), ECONNRESET);
        }

        control_server_get_stats(f.server, &st);
        ASSERT_EQ(st.protocol_errors, 6);
        /* And others are served as before. */
        _cleanup_(varlink_client_freep) VarlinkClient *c = client(&f);
        VarlinkReply r;
        ASSERT_OK(call(&f, c, PTRACED_METHOD_STATUS, NULL, &r));
        ASSERT_NULL(r.error);
        varlink_reply_done(&r);
        fixture_stop(&f);
}

static void test_status(void) {
        Fixture f;
        VarlinkReply r;

        fixture_start(&f, NULL);
        _cleanup_(varlink_client_freep) VarlinkClient *c = client(&f);
        ASSERT_OK(call(&f, c, PTRACED_METHOD_STATUS, NULL, &r));
        ASSERT_NULL(r.error);
        ASSERT_STREQ(str(&r, "state"), "recording");
        ASSERT_STREQ(str(&r, "source"), "sim");
        ASSERT_TRUE(json_object_get_boolean(json_object_object_get(r.parameters, "simulated")));
        ASSERT_EQ(num(&r, "cpus_recording"), 2);
        ASSERT_EQ(num(&r, "cpus_total"), 2);
        ASSERT_EQ(json_object_array_length(json_object_object_get(r.parameters, "cpu_restarts")), 0);
        ASSERT_EQ(num(&r, "buffer_size"), 64 * 1024);
        ASSERT_EQ(num(&r, "bundles_written"), 0);
        ASSERT_EQ(num(&r, "rate_limit_burst"), 10);
        ASSERT_EQ(num(&r, "rate_limit_remaining"), 10);
        ASSERT_CONTAINS(str(&r, "status"), "recording 2 CPUs");
        ASSERT_CONTAINS(str(&r, "directory"), f.dir);
        ASSERT_NULL(str(&r, "last_error"));
        varlink_reply_done(&r);
        fixture_stop(&f);
}

static void test_snapshot(void) {
        _cleanup_free_ char *path = NULL, *pending = NULL, *params = NULL;
        Fixture f;
        VarlinkReply r;
        struct stat st;

        fixture_start(&f, NULL);
        _cleanup_(varlink_client_freep) VarlinkClient *c = client(&f);

        /* Waiting: the reply names the written bundle. */
        ASSERT_OK(call(&f, c, PTRACED_METHOD_SNAPSHOT, "{\"reason\":\"latency\"}", &r));
        ASSERT_NULL(r.error);
        path = strdup(str(&r, "path"));
        ASSERT_TRUE(stat(path, &st) >= 0 && S_ISREG(st.st_mode));
        ASSERT_EQ(num(&r, "size"), st.st_size);
        ASSERT_FALSE(json_object_get_boolean(json_object_object_get(r.parameters, "coalesced")));
        ASSERT_NOT_NULL(str(&r, "id"));
        varlink_reply_done(&r);

        /* ListBundles has it, with its manifest's reason and source. */
        ASSERT_OK(call(&f, c, PTRACED_METHOD_LIST_BUNDLES, NULL, &r));
        struct json_object *list = json_object_object_get(r.parameters, "bundles");
        ASSERT_EQ(json_object_array_length(list), 1);
        struct json_object *b = json_object_array_get_idx(list, 0);
        ASSERT_STREQ(json_object_get_string(json_object_object_get(b, "path")), path);
        ASSERT_STREQ(json_object_get_string(json_object_object_get(b, "reason")), "latency");
        ASSERT_STREQ(json_object_get_string(json_object_object_get(b, "source")), "varlink");
        ASSERT_EQ(json_object_get_int64(json_object_object_get(b, "cpus")), 2);
        ASSERT_FALSE(json_object_get_boolean(json_object_object_get(r.parameters, "truncated")));
        varlink_reply_done(&r);

        /* Not waiting: a pending id at once, the outcome from GetSnapshot. */
        ASSERT_OK(call(&f, c, PTRACED_METHOD_SNAPSHOT, "{\"reason\":\"later\",\"wait\":false}", &r));
        ASSERT_NULL(r.error);
        pending = strdup(str(&r, "pending"));
        ASSERT_EQ(strlen(pending), PTRACED_PENDING_ID_LEN);
        ASSERT_NULL(str(&r, "path"));
        varlink_reply_done(&r);
        ASSERT_TRUE(asprintf(&params, "{\"pending\":\"%s\"}", pending) > 0);
        ASSERT_OK(call(&f, c, PTRACED_METHOD_GET_SNAPSHOT, params, &r));
        ASSERT_STREQ(str(&r, "state"), "pending");
        varlink_reply_done(&r);
        for (int i = 0; i < 300; i++) {
                ASSERT_OK(call(&f, c, PTRACED_METHOD_GET_SNAPSHOT, params, &r));
                if (!streq(str(&r, "state"), "pending"))
                        break;
                varlink_reply_done(&r);
                run_for(&f, 20 * USEC_PER_MSEC);
        }
        ASSERT_STREQ(str(&r, "state"), "written");
        ASSERT_NOT_NULL(str(&r, "path"));
        ASSERT_FALSE(streq(str(&r, "path"), path));
        varlink_reply_done(&r);

        /* oneway: no reply, still a snapshot. */
        SnapshotStats ms;
        struct json_object *p = json_tokener_parse("{\"reason\":\"oneway\"}");
        ASSERT_OK(varlink_client_send(c, PTRACED_METHOD_SNAPSHOT, p, VARLINK_CALL_ONEWAY, USEC_PER_SEC));
        json_object_put(p);
        for (int i = 0; i < 300; i++) {
                manager_get_stats(f.m, &ms);
                if (ms.bundles_written == 3)
                        break;
                run_for(&f, 20 * USEC_PER_MSEC);
        }
        ASSERT_EQ(ms.bundles_written, 3);
        ASSERT_OK(call(&f, c, PTRACED_METHOD_STATUS, NULL, &r));
        ASSERT_EQ(num(&r, "bundles_written"), 3);
        ASSERT_EQ(num(&r, "snapshots"), 3);
        varlink_reply_done(&r);
        fixture_stop(&f);
}

static void test_coalesce(void) {
        Fixture f;
        VarlinkReply r1, r2;
        struct json_object *p1 = json_tokener_parse("{\"reason\":\"first\"}"),
                           *p2 = json_tokener_parse("{\"reason\":\"second\"}");

        fixture_start(&f, NULL);
        _cleanup_(varlink_client_freep) VarlinkClient *c = client(&f);
        /* Pipelined: the daemon reads both in one go; the second arrives
         * while the first is being frozen and joins it. */
        ASSERT_OK(varlink_client_send(c, PTRACED_METHOD_SNAPSHOT, p1, 0, USEC_PER_SEC));
        ASSERT_OK(varlink_client_send(c, PTRACED_METHOD_SNAPSHOT, p2, 0, USEC_PER_SEC));
        ASSERT_OK(receive(&f, c, &r1));
        ASSERT_OK(receive(&f, c, &r2));
        ASSERT_NULL(r1.error);
        ASSERT_NULL(r2.error);
        ASSERT_STREQ(str(&r1, "path"), str(&r2, "path"));
        ASSERT_FALSE(json_object_get_boolean(json_object_object_get(r1.parameters, "coalesced")));
        ASSERT_TRUE(json_object_get_boolean(json_object_object_get(r2.parameters, "coalesced")));
        varlink_reply_done(&r1);
        varlink_reply_done(&r2);

        SnapshotStats ms;
        manager_get_stats(f.m, &ms);
        ASSERT_EQ(ms.snapshots, 1);
        ASSERT_EQ(ms.triggers_coalesced, 1);
        json_object_put(p1);
        json_object_put(p2);
        fixture_stop(&f);
}

static void tweak_rate(PtracedConfig *c, const char *dir) {
        c->triggers.interval = 60 * USEC_PER_SEC;
        c->triggers.burst = 2;
        c->triggers.source_burst = 0;
}

static void test_rate_limit(void) {
        Fixture f;
        VarlinkReply r;

        fixture_start(&f, tweak_rate);
        _cleanup_(varlink_client_freep) VarlinkClient *c = client(&f);
        ASSERT_OK(call(&f, c, PTRACED_METHOD_SNAPSHOT, "{\"reason\":\"a\"}", &r));
        ASSERT_NULL(r.error);
        varlink_reply_done(&r);
        /* Waiting, so the next one does not join its freeze (coalescing comes first). */
        ASSERT_OK(call(&f, c, PTRACED_METHOD_SNAPSHOT, "{\"reason\":\"b\"}", &r));
        ASSERT_NULL(r.error);
        varlink_reply_done(&r);
        ASSERT_OK(call(&f, c, PTRACED_METHOD_SNAPSHOT, "{\"reason\":\"c\"}", &r));
        ASSERT_STREQ(r.error, PTRACED_ERROR_RATE_LIMITED);
        ASSERT_CONTAINS(str(&r, "message"), "RateLimitBurst=2");
        int64_t retry = num(&r, "retry_after_usec");
        ASSERT_TRUE(retry > 50 * (int64_t) USEC_PER_SEC && retry <= 60 * (int64_t) USEC_PER_SEC);
        varlink_reply_done(&r);
        /* Without wait the refusal is the reply, not a pending id. */
        ASSERT_OK(call(&f, c, PTRACED_METHOD_SNAPSHOT, "{\"reason\":\"d\",\"wait\":false}", &r));
        ASSERT_STREQ(r.error, PTRACED_ERROR_RATE_LIMITED);
        varlink_reply_done(&r);

        ASSERT_OK(call(&f, c, PTRACED_METHOD_STATUS, NULL, &r));
        ASSERT_EQ(num(&r, "rate_limit_remaining"), 0);
        ASSERT_EQ(num(&r, "triggers_refused"), 2);
        ASSERT_CONTAINS(str(&r, "last_error"), PTRACED_ERROR_RATE_LIMITED);
        varlink_reply_done(&r);

        /* SIGUSR2 goes through the same governor. */
        SnapshotStats before, after;
        manager_get_stats(f.m, &before);
        ASSERT_OK(raise(SIGUSR2));
        run_for(&f, 100 * USEC_PER_MSEC);
        manager_get_stats(f.m, &after);
        ASSERT_EQ(after.triggers_refused, before.triggers_refused + 1);
        ASSERT_EQ(after.snapshots, before.snapshots);
        fixture_stop(&f);
}

static void tweak_warmup(PtracedConfig *c, const char *dir) {
        c->triggers.warmup = 30 * USEC_PER_SEC;
}

static void test_warmup(void) {
        Fixture f;
        VarlinkReply r;

        fixture_start(&f, tweak_warmup);
        _cleanup_(varlink_client_freep) VarlinkClient *c = client(&f);
        ASSERT_OK(call(&f, c, PTRACED_METHOD_STATUS, NULL, &r));
        ASSERT_STREQ(str(&r, "state"), "warming-up");
        ASSERT_TRUE(num(&r, "warmup_remaining_usec") > 25 * (int64_t) USEC_PER_SEC);
        varlink_reply_done(&r);
        ASSERT_OK(call(&f, c, PTRACED_METHOD_SNAPSHOT, NULL, &r));
        ASSERT_STREQ(r.error, PTRACED_ERROR_WARMING_UP);
        ASSERT_CONTAINS(str(&r, "message"), "WarmupSec=30.00s");
        ASSERT_TRUE(num(&r, "retry_after_usec") > 25 * (int64_t) USEC_PER_SEC);
        varlink_reply_done(&r);
        fixture_stop(&f);
}

static void tweak_duplicates(PtracedConfig *c, const char *dir) {
        c->triggers.duplicate_window = 30 * USEC_PER_SEC;
}

static void test_duplicates(void) {
        Fixture f;
        VarlinkReply r;

        fixture_start(&f, tweak_duplicates);
        _cleanup_(varlink_client_freep) VarlinkClient *c = client(&f);
        ASSERT_OK(call(&f, c, PTRACED_METHOD_SNAPSHOT, "{\"reason\":\"same\"}", &r));
        ASSERT_NULL(r.error);
        varlink_reply_done(&r);
        ASSERT_OK(call(&f, c, PTRACED_METHOD_SNAPSHOT, "{\"reason\":\"same\"}", &r));
        ASSERT_STREQ(r.error, PTRACED_ERROR_DUPLICATE);
        ASSERT_CONTAINS(str(&r, "message"), "give a different reason");
        ASSERT_TRUE(num(&r, "retry_after_usec") > 0);
        varlink_reply_done(&r);
        fixture_stop(&f);
}

/* In a child dropped to nobody: may connect, may introspect, may not read
 * status (group access) or snapshot. Returns the child's exit status. */
static int run_as_nobody(Fixture *f, bool status_allowed) {
        pid_t pid = fork();
        int st;

        ASSERT_TRUE(pid >= 0);
        if (pid == 0) {
                _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
                _cleanup_free_ char *error = NULL;
                VarlinkReply r;

                if (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0)
                        _exit(10);
                if (varlink_client_connect(f->socket, &c) < 0)
                        _exit(11);
                if (varlink_client_call(c, VARLINK_METHOD_GET_INFO, NULL, 0, 5 * USEC_PER_SEC, &r, &error) < 0 ||
                    r.error)
                        _exit(12);
                varlink_reply_done(&r);
                if (varlink_client_call(c, PTRACED_METHOD_STATUS, NULL, 0, 5 * USEC_PER_SEC, &r, &error) < 0)
                        _exit(13);
                if (status_allowed ? r.error != NULL : !streq_ptr(r.error, PTRACED_ERROR_PERMISSION_DENIED))
                        _exit(14);
                varlink_reply_done(&r);
                if (varlink_client_call(c, PTRACED_METHOD_SNAPSHOT, NULL, 0, 5 * USEC_PER_SEC, &r, &error) < 0)
                        _exit(15);
                if (!streq_ptr(r.error, PTRACED_ERROR_PERMISSION_DENIED) ||
                    !strstr(json_object_get_string(json_object_object_get(r.parameters, "message")),
                            "usermod -aG ptraced"))
                        _exit(16);
                varlink_reply_done(&r);
                _exit(0);
        }
        for (int i = 0; i < 2000; i++) {
                if (waitpid(pid, &st, WNOHANG) == pid)
                        return WIFEXITED(st) ? WEXITSTATUS(st) : 100;
                ASSERT_OK(sd_event_run(f->event, 5 * USEC_PER_MSEC));
        }
        kill(pid, SIGKILL);
        test_fail("the unprivileged child did not finish");
}

static void tweak_open_socket(PtracedConfig *c, const char *dir) {
        c->control.socket_mode = 0666;
}

static void tweak_open_everyone(PtracedConfig *c, const char *dir) {
        c->control.socket_mode = 0666;
        c->control.read_only_access = CONTROL_ACCESS_EVERYONE;
}

static void test_permissions(void) {
        Fixture f;
        struct stat st;
        SnapshotStats ms;

        fixture_start(&f, NULL);
        /* The default mode: only root (and group ptraced) can connect at all. */
        ASSERT_OK(stat(f.socket, &st));
        ASSERT_TRUE(S_ISSOCK(st.st_mode));
        ASSERT_EQ(st.st_mode & 07777, 0660);
        fixture_stop(&f);

        fixture_start(&f, tweak_open_socket);
        ASSERT_EQ(run_as_nobody(&f, false), 0);
        manager_get_stats(f.m, &ms);
        ASSERT_EQ(ms.snapshots, 0);
        fixture_stop(&f);

        fixture_start(&f, tweak_open_everyone);
        ASSERT_EQ(run_as_nobody(&f, true), 0);
        fixture_stop(&f);
}

static void tweak_timeout(PtracedConfig *c, const char *dir) {
        c->control.timeout = 300 * USEC_PER_MSEC;
}

static void test_slow_clients(void) {
        Fixture f;
        VarlinkReply r;
        ControlStats st;

        fixture_start(&f, tweak_timeout);
        VarlinkClient *loris = client(&f), *idle = client(&f), *waiter = client(&f);

        /* Half a call, then nothing: told so and closed. */
        ASSERT_EQ(send(varlink_client_fd(loris), "{\"method\":", 10, MSG_NOSIGNAL), 10);
        run_for(&f, 600 * USEC_PER_MSEC);
        ASSERT_OK(receive(&f, loris, &r));
        ASSERT_STREQ(r.error, PTRACED_ERROR_TIMEOUT);
        varlink_reply_done(&r);
        ASSERT_ERROR(receive(&f, loris, &r), ECONNRESET);
        /* Nothing at all: closed. */
        ASSERT_ERROR(receive(&f, idle, &r), ECONNRESET);
        control_server_get_stats(f.server, &st);
        ASSERT_EQ(st.timeouts, 3); /* the waiter, idle so far, too */
        varlink_client_free(loris);
        varlink_client_free(idle);
        varlink_client_free(waiter);

        /* Waiting for a bundle that takes longer than TimeoutSec= is fine. */
        waiter = client(&f);
        ASSERT_OK(call(&f, waiter, PTRACED_METHOD_SNAPSHOT, "{\"reason\":\"slow\"}", &r));
        ASSERT_NULL(r.error);
        varlink_reply_done(&r);
        varlink_client_free(waiter);
        fixture_stop(&f);
}

static void tweak_max_connections(PtracedConfig *c, const char *dir) {
        c->control.max_connections = 8;
}

static void test_many_connections(void) {
        VarlinkClient *c[40];
        unsigned served = 0, refused = 0;
        ControlStats st;
        Fixture f;

        fixture_start(&f, tweak_max_connections);
        for (size_t i = 0; i < ELEMENTSOF(c); i++) {
                c[i] = client(&f);
                ASSERT_OK(sd_event_run(f.event, 0));
        }
        run_for(&f, 50 * USEC_PER_MSEC);
        control_server_get_stats(f.server, &st);
        ASSERT_EQ(st.connections, 8);
        for (size_t i = 0; i < ELEMENTSOF(c); i++) {
                VarlinkReply r;
                int k = call(&f, c[i], PTRACED_METHOD_STATUS, NULL, &r);
                if (k >= 0 && !r.error)
                        served++;
                else if (k >= 0 && streq(r.error, PTRACED_ERROR_TOO_MANY_CONNECTIONS))
                        refused++;
                else
                        test_fail("connection %zu: %d %s", i, k, k >= 0 ? r.error : "");
                if (k >= 0)
                        varlink_reply_done(&r);
        }
        ASSERT_EQ(served, 8);
        ASSERT_EQ(refused, ELEMENTSOF(c) - 8);
        for (size_t i = 0; i < ELEMENTSOF(c); i++)
                varlink_client_free(c[i]);
        run_for(&f, 50 * USEC_PER_MSEC);
        control_server_get_stats(f.server, &st);
        ASSERT_EQ(st.connections, 0);
        ASSERT_EQ(st.refused, ELEMENTSOF(c) - 8);

        /* Room again. */
        _cleanup_(varlink_client_freep) VarlinkClient *d = client(&f);
        VarlinkReply r;
        ASSERT_OK(call(&f, d, PTRACED_METHOD_STATUS, NULL, &r));
        ASSERT_NULL(r.error);
        varlink_reply_done(&r);
        fixture_stop(&f);
}

static void test_vanishing_client(void) {
        SnapshotStats ms;
        ControlStats st;
        Fixture f;

        fixture_start(&f, NULL);
        VarlinkClient *c = client(&f);
        ASSERT_OK(varlink_client_send(c, PTRACED_METHOD_SNAPSHOT, NULL, 0, USEC_PER_SEC));
        run_for(&f, 5 * USEC_PER_MSEC);
        varlink_client_free(c); /* gone before the bundle is written */
        for (int i = 0; i < 500; i++) {
                manager_get_stats(f.m, &ms);
                if (ms.bundles_written == 1)
                        break;
                run_for(&f, 20 * USEC_PER_MSEC);
        }
        ASSERT_EQ(ms.bundles_written, 1);
        control_server_get_stats(f.server, &st);
        ASSERT_EQ(st.connections, 0);

        /* Pipelined replies to a client that never reads, then vanishes. */
        c = client(&f);
        struct json_object *p = json_tokener_parse("{\"interface\":\"io.ptraced\"}");
        for (int i = 0; i < 200; i++)
                (void) varlink_client_send(c, VARLINK_METHOD_GET_INTERFACE_DESCRIPTION, p, 0, 0);
        json_object_put(p);
        run_for(&f, 100 * USEC_PER_MSEC);
        varlink_client_free(c);
        run_for(&f, 50 * USEC_PER_MSEC);
        control_server_get_stats(f.server, &st);
        ASSERT_EQ(st.connections, 0);

        _cleanup_(varlink_client_freep) VarlinkClient *d = client(&f);
        VarlinkReply r;
        ASSERT_OK(call(&f, d, PTRACED_METHOD_STATUS, NULL, &r));
        ASSERT_EQ(num(&r, "bundles_written"), 1);
        varlink_reply_done(&r);
        fixture_stop(&f);
}

static void test_pipeline_order(void) {
        Fixture f;

        fixture_start(&f, NULL);
        _cleanup_(varlink_client_freep) VarlinkClient *c = client(&f);
        /* Many calls in flight; the replies come back in order. */
        for (int i = 0; i < 100; i++) {
                const char *iface = i % 2 ? "\"io.ptraced\"" : "\"org.varlink.service\"";
                char p[64];
                snprintf(p, sizeof p, "{\"interface\":%s}", iface);
                struct json_object *o = json_tokener_parse(p);
                ASSERT_OK(varlink_client_send(c, VARLINK_METHOD_GET_INTERFACE_DESCRIPTION, o, 0, USEC_PER_SEC));
                json_object_put(o);
                ASSERT_OK(sd_event_run(f.event, 0));
        }
        for (int i = 0; i < 100; i++) {
                VarlinkReply r;
                ASSERT_OK(receive(&f, c, &r));
                ASSERT_CONTAINS(str(&r, "description"), i % 2 ? "interface io.ptraced" : "interface org.varlink.service");
                varlink_reply_done(&r);
        }
        fixture_stop(&f);
}

static void tweak_fifo(PtracedConfig *c, const char *dir) {
        char p[256];
        snprintf(p, sizeof p, "%s/ctl.fifo", dir);
        c->control.fifo = strdup(p);
        snprintf(p, sizeof p, "%s/ack.fifo", dir);
        c->control.ack_fifo = strdup(p);
}

static void test_fifo(void) {
        char path[256], buf[1024];
        size_t got = 0;
        struct stat st;
        Fixture f;

        fixture_start(&f, tweak_fifo);
        snprintf(path, sizeof path, "%s/ctl.fifo", f.dir);
        ASSERT_OK(stat(path, &st));
        ASSERT_TRUE(S_ISFIFO(st.st_mode));
        ASSERT_EQ(st.st_mode & 07777, 0660);
        _cleanup_close_ int ctl = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
        snprintf(path, sizeof path, "%s/ack.fifo", f.dir);
        _cleanup_close_ int ack = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        ASSERT_TRUE(ctl >= 0 && ack >= 0);

        /* perf's commands, one an unknown one, one too long; answers in order. */
        char longline[400];
        memset(longline, 'z', sizeof longline);
        longline[sizeof longline - 1] = '\n';
        const char cmds[] = "ping\nsnapshot fifo reason\0bogus\n";
        ASSERT_EQ(write(ctl, cmds, sizeof cmds - 1), (ssize_t) sizeof cmds - 1);
        ASSERT_EQ(write(ctl, longline, sizeof longline), (ssize_t) sizeof longline);
        ASSERT_EQ(write(ctl, "ping\n", 5), 5);

        const char expect_prefix[] = "ack\n\0ack\n\0nack io.ptraced.InvalidParameter unknown command";
        for (int i = 0; i < 1000; i++) {
                ssize_t n = read(ack, buf + got, sizeof buf - got - 1);
                if (n > 0)
                        got += (size_t) n;
                if (got >= sizeof expect_prefix && memmem(buf, got, "ack\n\0", 5) &&
                    buf[got - 1] == 0 && got > 100 && memcmp(buf + got - 5, "ack\n\0", 5) == 0)
                        break;
                ASSERT_OK(sd_event_run(f.event, 10 * USEC_PER_MSEC));
        }
        ASSERT_TRUE(got >= sizeof expect_prefix - 1);
        ASSERT_EQ(memcmp(buf, expect_prefix, sizeof expect_prefix - 1), 0);
        buf[got] = 0;
        ASSERT_TRUE(memmem(buf, got, "nack io.ptraced.InvalidParameter command longer than 256 bytes", 61) != NULL);
        ASSERT_EQ(memcmp(buf + got - 5, "ack\n\0", 5), 0);

        SnapshotStats ms;
        manager_get_stats(f.m, &ms);
        ASSERT_EQ(ms.bundles_written, 1);

        /* FIFOs the daemon created go with it. */
        f.m = manager_free(f.m);
        f.server = NULL;
        ASSERT_TRUE(access(path, F_OK) < 0);
        ASSERT_OK(rm_rf(f.dir));
}

static void test_socket_takeover(void) {
        ControlServer *second = NULL;
        PtracedConfig c;
        Fixture f;

        fixture_start(&f, NULL);
        /* A second daemon on the same path is refused while the first listens. */
        ptraced_config_init(&c);
        c.control.socket = strdup(f.socket);
        ControlServerOptions o = { .config = &c.control };
        ASSERT_ERROR(control_server_new(&o, &second), EADDRINUSE);
        ASSERT_STREQ(control_server_socket_path(f.server), f.socket);
        ASSERT_FALSE(control_server_socket_activated(f.server));
        f.m = manager_free(f.m);
        f.server = NULL;
        /* Its socket is gone with it. */
        ASSERT_TRUE(access(f.socket, F_OK) < 0);

        /* A stale socket file (nobody listening) is replaced. */
        int fd = socket(AF_UNIX, SOCK_STREAM, 0);
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        strcpy(sa.sun_path, f.socket);
        ASSERT_OK(bind(fd, (struct sockaddr *) &sa, sizeof sa));
        close(fd);
        ASSERT_OK(control_server_new(&o, &second));
        second = control_server_free(second);
        /* Something that is not a socket is left alone. */
        ASSERT_OK(write_string_file(f.socket, "not a socket"));
        ASSERT_ERROR(control_server_new(&o, &second), EEXIST);
        ptraced_config_done(&c);
        ASSERT_OK(rm_rf(f.dir));
}

/* sd_notify to a NOTIFY_SOCKET of ours: READY=1 with STATUS= at start, and
 * WATCHDOG=1 from the event loop every half of WATCHDOG_USEC. */
static void test_notify(void) {
        char dir[] = "/tmp/test-control-notify-XXXXXX", path[128], buf[4096];
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        unsigned ready = 0, status = 0, watchdog = 0;
        Fixture f;
        int fd;

        if (geteuid() != 0)
                test_skip("needs root: the emulated CPUs' side-band comes from real system-wide perf events");
        ASSERT_NOT_NULL(mkdtemp(dir));
        snprintf(path, sizeof path, "%s/notify", dir);
        strcpy(sa.sun_path, path);
        fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        ASSERT_OK(fd);
        ASSERT_OK(bind(fd, (struct sockaddr *) &sa, sizeof sa));
        ASSERT_OK(setenv("NOTIFY_SOCKET", path, 1));
        ASSERT_OK(setenv("WATCHDOG_USEC", "100000", 1));

        fixture_start(&f, NULL);
        /* Drain as we go, as systemd does: a full datagram queue blocks
         * the sender. */
        usec_t end = now_usec(CLOCK_MONOTONIC) + 520 * USEC_PER_MSEC;
        while (now_usec(CLOCK_MONOTONIC) < end) {
                ASSERT_OK(sd_event_run(f.event, 5 * USEC_PER_MSEC));
                for (;;) {
                        ssize_t n = recv(fd, buf, sizeof buf - 1, 0);
                        if (n <= 0)
                                break;
                        buf[n] = 0;
                        for (char *save = NULL, *l = strtok_r(buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
                                ready += streq(l, "READY=1");
                                watchdog += streq(l, "WATCHDOG=1");
                                if (startswith(l, "STATUS=")) {
                                        ASSERT_CONTAINS(l, "recording 2 CPUs, 64.0 KiB each");
                                        status++;
                                }
                        }
                }
        }
        printf("READY=1 %u, STATUS= %u, WATCHDOG=1 %u in 0.5 s\n", ready, status, watchdog);
        ASSERT_EQ(ready, 1);
        ASSERT_TRUE(status >= 1);
        ASSERT_TRUE(watchdog >= 4); /* one per 50 ms, give or take the timer slack */
        fixture_stop(&f);
        ASSERT_OK(unsetenv("NOTIFY_SOCKET"));
        ASSERT_OK(unsetenv("WATCHDOG_USEC"));
        close(fd);
        ASSERT_OK(rm_rf(dir));
}

RUN_TESTS(TEST(test_dispatch_table), TEST(test_introspection), TEST(test_call_errors), TEST(test_hostile_messages), TEST(test_status),
          TEST(test_snapshot), TEST(test_coalesce), TEST(test_rate_limit), TEST(test_warmup), TEST(test_duplicates),
          TEST(test_permissions), TEST(test_slow_clients), TEST(test_many_connections),
          TEST(test_vanishing_client), TEST(test_pipeline_order), TEST(test_fifo), TEST(test_socket_takeover), TEST(test_notify));
