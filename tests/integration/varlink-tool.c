/* SPDX-License-Identifier: MIT */

/*
 * varlink-tool: what the control-plane integration tests need beyond ptctl.
 *
 *   call SOCKET METHOD [JSON] [--oneway]   one call; prints the reply
 *                                          ({"error":...} merged in on errors),
 *                                          exits 0, or 1 for an error reply
 *   raw SOCKET                             send stdin verbatim, print every
 *                                          reply until the daemon closes
 *   pipeline SOCKET METHOD JSON N          N calls in one write, print the N replies
 *   hold SOCKET N                          open N connections, call Status on
 *                                          each, print "served S refused R"
 *   squat SOCKET N SECONDS                 hold N connections, calling GetInfo on
 *                                          each every 4 s (within TimeoutSec=);
 *                                          print "held H refused R" once all
 *                                          were tried, exit after SECONDS
 *   slow SOCKET                            send half a call, report how long
 *                                          until the daemon gave up and what it said
 *   vanish SOCKET                          Snapshot(wait) then close at once
 *   notify-listen PATH SECONDS             receive sd_notify datagrams, print
 *                                          each assignment on a line
 *   storm SOCKET TOTAL SECONDS CONNECTIONS spread TOTAL Snapshot(wait=false)
 *                                          calls evenly over SECONDS on
 *                                          CONNECTIONS connections, probing
 *                                          Status meanwhile; print figures
 *
 * It links the same client code as ptctl (common/control/varlink-client.c).
 */

#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "common/basic/time-util.h"
#include "common/control/protocol.h"
#include "common/control/varlink-client.h"

#define TIMEOUT (10 * USEC_PER_SEC)

static int die(const char *fmt, ...) _printf_(1, 2);
static int die(const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
        exit(2);
}

static VarlinkClient *connect_or_die(const char *path) {
        VarlinkClient *c = NULL;
        int r = varlink_client_connect(path, &c);
        if (r < 0)
                die("connect %s: %s", path, strerror(-r));
        return c;
}

static void print_reply(const VarlinkReply *r) {
        struct json_object *o = json_object_new_object();

        if (r->error)
                json_object_object_add(o, "error", json_object_new_string(r->error));
        json_object_object_foreach(r->parameters, k, v)
                json_object_object_add(o, k, json_object_get(v));
        puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
        fflush(stdout);
        json_object_put(o);
}

static struct json_object *parse_or_die(const char *s) {
        _cleanup_free_ char *error = NULL;
        struct json_object *o = NULL;

        if (varlink_json_parse(s, strlen(s), &o, &error) < 0)
                die("bad JSON '%s': %s", s, error);
        return o;
}

static int cmd_call(int argc, char **argv) {
        _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
        _cleanup_free_ char *error = NULL;
        struct json_object *p = NULL;
        unsigned flags = 0;
        VarlinkReply r = {};
        int k;

        if (argc < 4)
                die("usage: call SOCKET METHOD [JSON] [--oneway]");
        for (int i = 4; i < argc; i++)
                if (streq(argv[i], "--oneway"))
                        flags |= VARLINK_CALL_ONEWAY;
                else
                        p = parse_or_die(argv[i]);
        c = connect_or_die(argv[2]);
        k = varlink_client_call(c, argv[3], p, flags, TIMEOUT, &r, &error);
        if (p)
                json_object_put(p);
        if (k < 0)
                die("call %s: %s%s%s", argv[3], strerror(-k), error ? ": " : "", strempty(error));
        if (flags & VARLINK_CALL_ONEWAY)
                return 0;
        print_reply(&r);
        k = r.error ? 1 : 0;
        varlink_reply_done(&r);
        return k;
}

static int cmd_raw(int argc, char **argv) {
        _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
        char buf[65536];
        ssize_t n;

        if (argc != 3)
                die("usage: raw SOCKET < BYTES");
        c = connect_or_die(argv[2]);
        while ((n = read(STDIN_FILENO, buf, sizeof buf)) > 0)
                for (ssize_t off = 0; off < n;) {
                        ssize_t w = send(varlink_client_fd(c), buf + off, (size_t) (n - off), MSG_NOSIGNAL);
                        if (w < 0 && errno == EAGAIN) {
                                struct pollfd pfd = { .fd = varlink_client_fd(c), .events = POLLOUT };
                                (void) poll(&pfd, 1, 1000);
                                continue;
                        }
                        if (w < 0)
                                goto replies; /* the daemon closed: read what it said */
                        off += w;
                }
replies:
        for (;;) {
                _cleanup_free_ char *error = NULL;
                VarlinkReply r = {};
                int k = varlink_client_receive(c, TIMEOUT, &r, &error);
                if (k == -ECONNRESET) {
                        puts("EOF");
                        return 0;
                }
                if (k < 0)
                        die("receive: %s%s%s", strerror(-k), error ? ": " : "", strempty(error));
                print_reply(&r);
                varlink_reply_done(&r);
        }
}

static int cmd_pipeline(int argc, char **argv) {
        _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
        _cleanup_free_ char *all = NULL;
        struct json_object *p;
        size_t total = 0;
        unsigned n;
        int k;

        if (argc != 6 || sscanf(argv[5], "%u", &n) != 1 || n == 0 || n > 1000)
                die("usage: pipeline SOCKET METHOD JSON N");
        p = parse_or_die(argv[4]);
        /* All calls in one write, so the daemon reads them together. */
        for (unsigned i = 0; i < n; i++) {
                _cleanup_free_ char *m = NULL;
                size_t size;
                if (varlink_format_call(argv[3], p, 0, &m, &size) < 0)
                        die("out of memory");
                all = realloc(all, total + size);
                memcpy(all + total, m, size);
                total += size;
        }
        json_object_put(p);
        c = connect_or_die(argv[2]);
        if (send(varlink_client_fd(c), all, total, MSG_NOSIGNAL) != (ssize_t) total)
                die("send: %m");
        for (unsigned i = 0; i < n; i++) {
                _cleanup_free_ char *error = NULL;
                VarlinkReply r = {};
                k = varlink_client_receive(c, 5 * 60 * USEC_PER_SEC, &r, &error);
                if (k < 0)
                        die("reply %u: %s", i, strerror(-k));
                print_reply(&r);
                varlink_reply_done(&r);
        }
        return 0;
}

static int cmd_hold(int argc, char **argv) {
        unsigned n, served = 0, refused = 0, other = 0;
        VarlinkClient **c;

        if (argc != 4 || sscanf(argv[3], "%u", &n) != 1 || n == 0 || n > 10000)
                die("usage: hold SOCKET N");
        c = calloc(n, sizeof(VarlinkClient *));
        /* All connected before any calls: the daemon sees N at once. */
        for (unsigned i = 0; i < n; i++)
                c[i] = connect_or_die(argv[2]);
        usleep(200 * 1000);
        for (unsigned i = 0; i < n; i++) {
                _cleanup_free_ char *error = NULL;
                VarlinkReply r = {};
                int k = varlink_client_call(c[i], PTRACED_METHOD_STATUS, NULL, 0, TIMEOUT, &r, &error);
                if (k >= 0 && !r.error)
                        served++;
                else if (k >= 0 && streq(r.error, PTRACED_ERROR_TOO_MANY_CONNECTIONS))
                        refused++;
                else
                        other++;
                if (k >= 0)
                        varlink_reply_done(&r);
        }
        printf("served %u refused %u other %u\n", served, refused, other);
        for (unsigned i = 0; i < n; i++)
                varlink_client_free(c[i]);
        free(c);
        return other ? 1 : 0;
}

/* One GetInfo on c: 1 answered, 0 refused (TooManyConnections), -1 other. */
static int get_info(VarlinkClient *c) {
        _cleanup_free_ char *error = NULL;
        VarlinkReply r = {};
        int k = varlink_client_call(c, VARLINK_METHOD_GET_INFO, NULL, 0, TIMEOUT, &r, &error), ret;

        if (k < 0)
                return -1;
        ret = !r.error ? 1 : streq(r.error, PTRACED_ERROR_TOO_MANY_CONNECTIONS) ? 0 : -1;
        varlink_reply_done(&r);
        return ret;
}

static int cmd_squat(int argc, char **argv) {
        unsigned n, seconds, held = 0, refused = 0;
        VarlinkClient **c;
        usec_t end;

        if (argc != 5 || sscanf(argv[3], "%u", &n) != 1 || sscanf(argv[4], "%u", &seconds) != 1 || n == 0 ||
            n > 4096)
                die("usage: squat SOCKET N SECONDS");
        end = now_usec(CLOCK_MONOTONIC) + seconds * USEC_PER_SEC;
        c = calloc(n, sizeof(VarlinkClient *));
        for (unsigned i = 0; i < n; i++) {
                c[i] = connect_or_die(argv[2]);
                int k = get_info(c[i]);
                if (k < 0)
                        die("GetInfo on connection %u failed", i);
                if (k == 0)
                        c[i] = varlink_client_free(c[i]);
                k > 0 ? held++ : refused++;
        }
        printf("held %u refused %u\n", held, refused);
        fflush(stdout);
        while (now_usec(CLOCK_MONOTONIC) < end) {
                sleep(4);
                for (unsigned i = 0; i < n; i++)
                        if (c[i] && get_info(c[i]) <= 0)
                                c[i] = varlink_client_free(c[i]);
        }
        for (unsigned i = 0; i < n; i++)
                varlink_client_free(c[i]);
        free(c);
        return 0;
}

static int cmd_slow(int argc, char **argv) {
        _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
        _cleanup_free_ char *error = NULL;
        usec_t start = now_usec(CLOCK_MONOTONIC);
        VarlinkReply r = {};
        int k;

        if (argc != 3)
                die("usage: slow SOCKET");
        c = connect_or_die(argv[2]);
        /* A call that never ends, one byte at a time. */
        const char part[] = "{\"method\":\"io.ptraced.Status\"";
        for (size_t i = 0; i < sizeof part - 1; i++) {
                if (send(varlink_client_fd(c), part + i, 1, MSG_NOSIGNAL) != 1)
                        break;
                usleep(100 * 1000);
        }
        k = varlink_client_receive(c, 60 * USEC_PER_SEC, &r, &error);
        printf("closed after %" PRIu64 " ms: %s\n", (now_usec(CLOCK_MONOTONIC) - start) / USEC_PER_MSEC,
               k >= 0 ? strna(r.error) : strerror(-k));
        if (k >= 0) {
                varlink_reply_done(&r);
                k = varlink_client_receive(c, 5 * USEC_PER_SEC, &r, &error);
                printf("then: %s\n", k == -ECONNRESET ? "EOF" : "more data");
        }
        return 0;
}

static int cmd_vanish(int argc, char **argv) {
        VarlinkClient *c;
        struct json_object *p;

        if (argc != 3)
                die("usage: vanish SOCKET");
        c = connect_or_die(argv[2]);
        p = parse_or_die("{\"reason\":\"vanished\"}");
        if (varlink_client_send(c, PTRACED_METHOD_SNAPSHOT, p, 0, TIMEOUT) < 0)
                die("send failed");
        json_object_put(p);
        varlink_client_free(c);
        return 0;
}

static int cmd_notify_listen(int argc, char **argv) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        usec_t end;
        int fd;

        if (argc != 4)
                die("usage: notify-listen PATH SECONDS");
        end = now_usec(CLOCK_MONOTONIC) + (usec_t) atoi(argv[3]) * USEC_PER_SEC;
        if (strlen(argv[2]) >= sizeof sa.sun_path)
                die("path too long");
        strcpy(sa.sun_path, argv[2]);
        fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd < 0 || bind(fd, (struct sockaddr *) &sa, sizeof sa) < 0)
                die("bind %s: %m", argv[2]);
        printf("LISTENING\n");
        fflush(stdout);
        for (;;) {
                usec_t now = now_usec(CLOCK_MONOTONIC);
                struct pollfd p = { .fd = fd, .events = POLLIN };
                char buf[4096];
                ssize_t n;

                if (now >= end)
                        break;
                if (poll(&p, 1, (int) ((end - now) / USEC_PER_MSEC) + 1) <= 0)
                        continue;
                n = recv(fd, buf, sizeof buf - 1, 0);
                if (n <= 0)
                        continue;
                buf[n] = 0;
                /* One assignment per line, each datagram's marked. */
                for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n"))
                        printf("%" PRIu64 " %s\n", now_usec(CLOCK_MONOTONIC) / USEC_PER_MSEC, line);
                fflush(stdout);
        }
        unlink(argv[2]);
        return 0;
}

/* ---- storm ---- */

typedef struct StormConn {
        VarlinkClient *c;
        bool busy;
        usec_t sent_at;
} StormConn;

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
        return x < y ? -1 : x > y;
}

static int cmd_storm(int argc, char **argv) {
        unsigned total, seconds, n_conns, sent = 0, answered = 0, pending = 0, limited = 0, other = 0, probes = 0;
        uint64_t *latency, probe_max = 0, lat_max = 0;
        usec_t start, interval, end, next_probe;
        StormConn *conns;
        VarlinkClient *probe;
        char other_names[512] = "";

        if (argc != 6 || sscanf(argv[3], "%u", &total) != 1 || sscanf(argv[4], "%u", &seconds) != 1 ||
            sscanf(argv[5], "%u", &n_conns) != 1 || total == 0 || seconds == 0 || n_conns == 0 || n_conns > 256)
                die("usage: storm SOCKET TOTAL SECONDS CONNECTIONS");
        latency = calloc(total, sizeof(uint64_t));
        conns = calloc(n_conns, sizeof(StormConn));
        for (unsigned i = 0; i < n_conns; i++)
                conns[i].c = connect_or_die(argv[2]);
        probe = connect_or_die(argv[2]);

        start = now_usec(CLOCK_MONOTONIC);
        interval = (usec_t) seconds * USEC_PER_SEC / total;
        end = start + (usec_t) seconds * USEC_PER_SEC + 30 * USEC_PER_SEC; /* give up on answers after that */
        next_probe = start;

        while (answered < total && now_usec(CLOCK_MONOTONIC) < end) {
                struct pollfd pfd[256];
                usec_t now = now_usec(CLOCK_MONOTONIC);

                /* Send what is due on idle connections. */
                for (unsigned i = 0; i < n_conns && sent < total && now >= start + sent * interval; i++) {
                        StormConn *s = &conns[i];
                        char p[96];
                        if (s->busy)
                                continue;
                        snprintf(p, sizeof p, "{\"reason\":\"storm %u\",\"wait\":false}", sent);
                        struct json_object *o = parse_or_die(p);
                        if (varlink_client_send(s->c, PTRACED_METHOD_SNAPSHOT, o, 0, TIMEOUT) < 0)
                                die("storm: send failed");
                        json_object_put(o);
                        s->busy = true;
                        s->sent_at = now_usec(CLOCK_MONOTONIC);
                        sent++;
                }
                /* The probe: is the daemon answering others? */
                if (now >= next_probe) {
                        _cleanup_free_ char *error = NULL;
                        VarlinkReply r = {};
                        usec_t t0 = now_usec(CLOCK_MONOTONIC);
                        if (varlink_client_call(probe, PTRACED_METHOD_STATUS, NULL, 0, TIMEOUT, &r, &error) < 0 ||
                            r.error)
                                die("storm: Status probe failed");
                        varlink_reply_done(&r);
                        probe_max = MAX(probe_max, now_usec(CLOCK_MONOTONIC) - t0);
                        probes++;
                        next_probe = now + 100 * USEC_PER_MSEC;
                }

                for (unsigned i = 0; i < n_conns; i++)
                        pfd[i] = (struct pollfd){ .fd = varlink_client_fd(conns[i].c), .events = POLLIN };
                now = now_usec(CLOCK_MONOTONIC);
                usec_t due = sent < total ? start + sent * interval : now + 10 * USEC_PER_MSEC;
                int ms = due > now ? (int) ((due - now) / USEC_PER_MSEC) : 0;
                (void) poll(pfd, n_conns, MIN(ms, 100));

                for (unsigned i = 0; i < n_conns; i++) {
                        StormConn *s = &conns[i];
                        _cleanup_free_ char *error = NULL;
                        VarlinkReply r = {};
                        int k;

                        if (!s->busy || !(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
                                continue;
                        k = varlink_client_receive(s->c, 0, &r, &error);
                        if (k == -ETIMEDOUT)
                                continue;
                        if (k < 0)
                                die("storm: connection %u: %s", i, strerror(-k));
                        latency[answered++] = now_usec(CLOCK_MONOTONIC) - s->sent_at;
                        s->busy = false;
                        if (!r.error)
                                pending++;
                        else if (streq(r.error, PTRACED_ERROR_RATE_LIMITED))
                                limited++;
                        else {
                                other++;
                                if (!strstr(other_names, r.error) && strlen(other_names) + strlen(r.error) + 2 <
                                                                             sizeof other_names) {
                                        strcat(other_names, " ");
                                        strcat(other_names, r.error);
                                }
                        }
                        varlink_reply_done(&r);
                }
        }

        usec_t elapsed = now_usec(CLOCK_MONOTONIC) - start;
        qsort(latency, answered, sizeof(uint64_t), cmp_u64);
        for (unsigned i = 0; i < answered; i++)
                lat_max = MAX(lat_max, latency[i]);
        printf("sent %u answered %u accepted %u rate_limited %u other %u%s\n", sent, answered, pending, limited, other,
               other_names);
        printf("elapsed_ms %" PRIu64 " requests_per_s %.0f\n", elapsed / USEC_PER_MSEC,
               answered * (double) USEC_PER_SEC / (double) elapsed);
        printf("latency_us p50 %" PRIu64 " p99 %" PRIu64 " max %" PRIu64 "\n",
               answered ? latency[answered / 2] : 0, answered ? latency[answered * 99 / 100] : 0, lat_max);
        printf("status_probes %u probe_max_us %" PRIu64 "\n", probes, probe_max);
        for (unsigned i = 0; i < n_conns; i++)
                varlink_client_free(conns[i].c);
        varlink_client_free(probe);
        free(conns);
        free(latency);
        return answered == total ? 0 : 1;
}

int main(int argc, char **argv) {
        if (argc < 2)
                die("usage: varlink-tool call|raw|pipeline|hold|squat|slow|vanish|notify-listen|storm ...");
        if (streq(argv[1], "call"))
                return cmd_call(argc, argv);
        if (streq(argv[1], "raw"))
                return cmd_raw(argc, argv);
        if (streq(argv[1], "pipeline"))
                return cmd_pipeline(argc, argv);
        if (streq(argv[1], "hold"))
                return cmd_hold(argc, argv);
        if (streq(argv[1], "squat"))
                return cmd_squat(argc, argv);
        if (streq(argv[1], "slow"))
                return cmd_slow(argc, argv);
        if (streq(argv[1], "vanish"))
                return cmd_vanish(argc, argv);
        if (streq(argv[1], "notify-listen"))
                return cmd_notify_listen(argc, argv);
        if (streq(argv[1], "storm"))
                return cmd_storm(argc, argv);
        die("unknown command %s", argv[1]);
}
