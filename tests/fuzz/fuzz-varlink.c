/* SPDX-License-Identifier: MIT */

/* What a client can send the control socket: a byte stream split into
 * messages at NULs (with the daemon's size limit), each parsed as a call
 * and validated against the io.ptraced method table, and, for the client
 * side, parsed as a reply. */

#include "common/control/protocol.h"
#include "common/control/varlink.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        VarlinkBuffer b;
        const char *msg;
        size_t n;

        /* A small limit too, so that the over-limit path is reached. */
        varlink_buffer_init(&b, size % 2 ? VARLINK_CALL_MAX : 512);
        /* Feed in two pieces, as reads would. */
        size_t half = size / 2;
        for (int piece = 0; piece < 2; piece++) {
                const uint8_t *p = piece ? data + half : data;
                size_t len = piece ? size - half : half;
                if (varlink_buffer_append(&b, p, len) < 0)
                        break;
                for (;;) {
                        VarlinkCall call = {};
                        VarlinkReply reply = {};
                        char *error = NULL;
                        int r = varlink_buffer_next(&b, &msg, &n);
                        if (r <= 0)
                                break;
                        r = varlink_call_parse(msg, n, &call, &error);
                        free(error);
                        error = NULL;
                        if (r >= 0) {
                                const ProtocolMethod *m = protocol_method_find(call.method);
                                const char *param = NULL;
                                if (m)
                                        (void) protocol_check_parameters(m, call.parameters, &param, &error);
                                free(error);
                                error = NULL;
                                (void) varlink_method_interface_length(call.method);
                                varlink_call_done(&call);
                        }
                        if (varlink_reply_parse(msg, n, &reply, &error) >= 0)
                                varlink_reply_done(&reply);
                        free(error);
                }
        }
        varlink_buffer_done(&b);
        return 0;
}
