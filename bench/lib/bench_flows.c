#include "bench_flows.h"

#include "flows/flows.h"

#include <stdio.h>
#include <string.h>

int bench_flow_add(struct store *st, const char *id, const char *script, char *err,
                   size_t err_cap)
{
    char manifest[256];
    snprintf(manifest, sizeof manifest, "{\"format\":1,\"id\":\"%s\",\"version\":1,"
             "\"purpose\":\"benchmark\",\"trigger\":{\"manual\":true}}", id);
    struct flow_installed in;
    if (flows_install(st, script, strlen(script), manifest, strlen(manifest), "bench/flow.js", &in,
                      err, err_cap) != 0 ||
        flows_approve(st, id, 1, in.code_hash, err, err_cap) != 0)
        return -1;
    return 0;
}
