/* The activation request the pool tests send: the flow profile's defaults, a script,
 * and a 60 s wall deadline (generous for a loaded machine; no test waits on it).
 * Header-only: the tools link tests/lib without the parent's modules. */
#ifndef BASAL_TESTS_FLOW_REQUEST_H
#define BASAL_TESTS_FLOW_REQUEST_H

#include "supervisor/activation.h"

#include <string.h>

static inline void flow_request_for(struct activation_request *req, const char *script)
{
    memset(req, 0, sizeof *req);
    activation_request_defaults(req, PROTO_PROFILE_FLOW);
    req->script = script;
    req->script_len = strlen(script);
    req->deadline_ms = 60000;
}

#endif
