/* SPDX-License-Identifier: MIT */

/* Varlink framing and messages: splitting a stream at NULs, the size limit,
 * what a call and a reply must look like, and that building and parsing
 * agree. */

#include <sys/socket.h>

#include "common/control/varlink.h"
#include "test.h"

static void test_buffer_split(void) {
        VarlinkBuffer b;
        const char *m;
        size_t n;

        varlink_buffer_init(&b, 64);
        ASSERT_EQ(varlink_buffer_next(&b, &m, &n), 0);
        ASSERT_OK(varlink_buffer_append(&b, "{\"a\":1}\0{\"b\"", 12));
        ASSERT_EQ(varlink_buffer_next(&b, &m, &n), 1);
        ASSERT_EQ(n, 7);
        ASSERT_STREQ(m, "{\"a\":1}");
        ASSERT_EQ(varlink_buffer_next(&b, &m, &n), 0);
        ASSERT_EQ(varlink_buffer_pending(&b), 4);
        ASSERT_OK(varlink_buffer_append(&b, ":2}\0\0", 5));
        ASSERT_EQ(varlink_buffer_next(&b, &m, &n), 1);
        ASSERT_STREQ(m, "{\"b\":2}");
        /* An empty message is a message (and an invalid call). */
        ASSERT_EQ(varlink_buffer_next(&b, &m, &n), 1);
        ASSERT_EQ(n, 0);
        ASSERT_EQ(varlink_buffer_next(&b, &m, &n), 0);
        ASSERT_EQ(varlink_buffer_pending(&b), 0);
        varlink_buffer_done(&b);
}

static void test_buffer_limit(void) {
        char big[100];
        VarlinkBuffer b;
        const char *m;
        size_t n;

        memset(big, 'x', sizeof big);
        varlink_buffer_init(&b, 16);
        /* 15 bytes and the NUL fit exactly. */
        ASSERT_OK(varlink_buffer_append(&b, big, 15));
        ASSERT_OK(varlink_buffer_append(&b, "", 1));
        ASSERT_EQ(varlink_buffer_next(&b, &m, &n), 1);
        ASSERT_EQ(n, 15);
        /* 16 bytes without a NUL are over. */
        ASSERT_OK(varlink_buffer_append(&b, big, 16));
        ASSERT_ERROR(varlink_buffer_next(&b, &m, &n), EMSGSIZE);
        ASSERT_ERROR(varlink_buffer_append(&b, big, 1), EMSGSIZE);
        varlink_buffer_done(&b);

        /* The buffer never holds more than the limit, whatever arrives. */
        varlink_buffer_init(&b, 16);
        ASSERT_ERROR(varlink_buffer_append(&b, big, sizeof big), EMSGSIZE);
        ASSERT_TRUE(b.allocated <= 16);
        varlink_buffer_done(&b);
}

static void test_buffer_read(void) {
        int sv[2];
        VarlinkBuffer b;
        const char *m;
        size_t n;

        ASSERT_OK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv));
        varlink_buffer_init(&b, VARLINK_CALL_MAX);
        ASSERT_ERROR(varlink_buffer_read(&b, sv[0]), EAGAIN);
        ASSERT_EQ(write(sv[1], "{}\0{}", 5), 5);
        ASSERT_EQ(varlink_buffer_read(&b, sv[0]), 5);
        ASSERT_EQ(varlink_buffer_next(&b, &m, &n), 1);
        ASSERT_EQ(varlink_buffer_next(&b, &m, &n), 0);
        close(sv[1]);
        ASSERT_EQ(varlink_buffer_read(&b, sv[0]), 0); /* EOF */
        varlink_buffer_done(&b);
        close(sv[0]);
}

static void test_method_names(void) {
        ASSERT_TRUE(varlink_method_name_is_valid("io.ptraced.Snapshot"));
        ASSERT_TRUE(varlink_method_name_is_valid("org.varlink.service.GetInfo"));
        ASSERT_TRUE(varlink_method_name_is_valid("com.example-1.a0.M2"));
        ASSERT_EQ(varlink_method_interface_length("io.ptraced.Snapshot"), strlen("io.ptraced"));
        ASSERT_FALSE(varlink_method_name_is_valid(""));
        ASSERT_FALSE(varlink_method_name_is_valid("Snapshot"));
        ASSERT_FALSE(varlink_method_name_is_valid("ptraced.Snapshot"));      /* one segment */
        ASSERT_FALSE(varlink_method_name_is_valid("io.ptraced.snapshot"));   /* lower-case method */
        ASSERT_FALSE(varlink_method_name_is_valid("io..ptraced.Snapshot"));  /* empty segment */
        ASSERT_FALSE(varlink_method_name_is_valid("io.ptraced.Snap-shot"));
        ASSERT_FALSE(varlink_method_name_is_valid("io.-ptraced.Snapshot"));
        ASSERT_FALSE(varlink_method_name_is_valid("1o.ptraced.Snapshot"));
        ASSERT_FALSE(varlink_method_name_is_valid("io.ptraced."));
        ASSERT_FALSE(varlink_method_name_is_valid("io.pt raced.Snapshot"));
}

static void expect_call_error(const char *msg, const char *what) {
        _cleanup_free_ char *error = NULL;
        VarlinkCall c = {};

        ASSERT_ERROR(varlink_call_parse(msg, strlen(msg), &c, &error), EBADMSG);
        ASSERT_CONTAINS(error, what);
        ASSERT_NULL(c.method);
}

static void test_call_parse(void) {
        _cleanup_free_ char *error = NULL;
        VarlinkCall c = {};
        const char *m;

        m = "{\"method\":\"io.ptraced.Snapshot\",\"parameters\":{\"reason\":\"latency\"},\"oneway\":true,\"x\":1}";
        ASSERT_OK(varlink_call_parse(m, strlen(m), &c, &error));
        ASSERT_STREQ(c.method, "io.ptraced.Snapshot");
        ASSERT_EQ(c.flags, VARLINK_CALL_ONEWAY);
        ASSERT_STREQ(json_object_get_string(json_object_object_get(c.parameters, "reason")), "latency");
        varlink_call_done(&c);

        /* Parameters absent or null: an empty object. */
        m = " {\"method\":\"io.ptraced.Status\",\"parameters\":null,\"more\":true} \n";
        ASSERT_OK(varlink_call_parse(m, strlen(m), &c, &error));
        ASSERT_TRUE(json_object_is_type(c.parameters, json_type_object));
        ASSERT_EQ(json_object_object_length(c.parameters), 0);
        ASSERT_EQ(c.flags, VARLINK_CALL_MORE);
        varlink_call_done(&c);

        expect_call_error("", "not valid JSON");
        expect_call_error("{\"method\":", "not valid JSON");
        expect_call_error("{\"method\":\"io.ptraced.Status\"} x", "not valid JSON");
        expect_call_error("{'method':'io.ptraced.Status'}", "not valid JSON");
        expect_call_error("[1,2]", "must be a JSON object");
        expect_call_error("\"io.ptraced.Status\"", "must be a JSON object");
        expect_call_error("{}", "needs \"method\"");
        expect_call_error("{\"method\":5}", "needs \"method\"");
        expect_call_error("{\"method\":\"status\"}", "\"interface.Method\"");
        expect_call_error("{\"method\":\"io.ptraced.S\\u0000x\"}", "\"interface.Method\"");
        expect_call_error("{\"method\":\"io.ptraced.Status\",\"parameters\":[]}", "\"parameters\" must be an object");
        expect_call_error("{\"method\":\"io.ptraced.Status\",\"oneway\":1}", "\"oneway\" must be true or false");
        expect_call_error("{\"method\":\"io.ptraced.Status\",\"more\":\"yes\"}", "\"more\" must be true or false");
        /* Invalid UTF-8 in a string. */
        expect_call_error("{\"method\":\"io.ptraced.Status\",\"parameters\":{\"a\":\"\xff\"}}", "not valid JSON");

        /* Nesting is bounded. */
        char deep[256] = "{\"method\":\"io.ptraced.Status\",\"parameters\":{\"a\":";
        for (int i = 0; i < 40; i++)
                strcat(deep, "[");
        for (int i = 0; i < 40; i++)
                strcat(deep, "]");
        strcat(deep, "}}");
        expect_call_error(deep, "not valid JSON");
}

static void test_reply_parse(void) {
        _cleanup_free_ char *error = NULL;
        VarlinkReply r = {};
        const char *m;

        m = "{\"parameters\":{\"path\":\"/x\"}}";
        ASSERT_OK(varlink_reply_parse(m, strlen(m), &r, &error));
        ASSERT_NULL(r.error);
        ASSERT_STREQ(json_object_get_string(json_object_object_get(r.parameters, "path")), "/x");
        varlink_reply_done(&r);

        m = "{\"error\":\"io.ptraced.RateLimited\",\"parameters\":{\"message\":\"m\"},\"continues\":false}";
        ASSERT_OK(varlink_reply_parse(m, strlen(m), &r, &error));
        ASSERT_STREQ(r.error, "io.ptraced.RateLimited");
        ASSERT_FALSE(r.continues);
        varlink_reply_done(&r);

        m = "{\"error\":\"rate limited\"}";
        ASSERT_ERROR(varlink_reply_parse(m, strlen(m), &r, &error), EBADMSG);
        m = "{\"error\":7}";
        ASSERT_ERROR(varlink_reply_parse(m, strlen(m), &r, &error), EBADMSG);
}

static void test_format_roundtrip(void) {
        _cleanup_free_ char *msg = NULL, *error = NULL;
        struct json_object *p = json_object_new_object();
        VarlinkCall c = {};
        VarlinkReply r = {};
        size_t size;

        json_object_object_add(p, "reason", json_object_new_string("a/b \"q\" ü"));
        ASSERT_OK(varlink_format_call("io.ptraced.Snapshot", p, VARLINK_CALL_ONEWAY | VARLINK_CALL_MORE, &msg, &size));
        ASSERT_EQ(msg[size - 1], 0);
        ASSERT_EQ(strlen(msg), size - 1);
        ASSERT_NULL(strstr(msg, "\\/")); /* no slash escaping */
        ASSERT_OK(varlink_call_parse(msg, size - 1, &c, &error));
        ASSERT_STREQ(c.method, "io.ptraced.Snapshot");
        ASSERT_EQ(c.flags, VARLINK_CALL_ONEWAY | VARLINK_CALL_MORE);
        ASSERT_STREQ(json_object_get_string(json_object_object_get(c.parameters, "reason")), "a/b \"q\" ü");
        varlink_call_done(&c);
        msg = mfree(msg);

        ASSERT_OK(varlink_format_error("io.ptraced.Failed", p, &msg, &size));
        ASSERT_OK(varlink_reply_parse(msg, size - 1, &r, &error));
        ASSERT_STREQ(r.error, "io.ptraced.Failed");
        varlink_reply_done(&r);
        msg = mfree(msg);

        ASSERT_OK(varlink_format_reply(NULL, &msg, &size));
        ASSERT_STREQ(msg, "{\"parameters\":{}}");
        json_object_put(p);
}

RUN_TESTS(TEST(test_buffer_split), TEST(test_buffer_limit), TEST(test_buffer_read), TEST(test_method_names),
          TEST(test_call_parse), TEST(test_reply_parse), TEST(test_format_roundtrip));
