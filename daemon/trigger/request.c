/* SPDX-License-Identifier: MIT */

#include "daemon/trigger/request.h"

TriggerRequest *trigger_request_new(const char *reason, const char *source) {
        TriggerRequest *t = calloc(1, sizeof(*t));

        if (!t)
                return NULL;
        t->reason = strdup(reason ?: "");
        t->source = strdup(source ?: "");
        t->received_at = now_nsec(CLOCK_MONOTONIC);
        if (!t->reason || !t->source)
                return trigger_request_free(t);
        return t;
}

TriggerRequest *trigger_request_free(TriggerRequest *t) {
        if (!t)
                return NULL;
        free(t->reason);
        free(t->source);
        free(t->requester_comm);
        if (t->details)
                json_object_put(t->details);
        return mfree(t);
}
