/* The host calls of the script's API as the worker makes them: each one's HostCall
 * kind, the arguments it sends at most, and whether the engine blocks on it. The
 * parent's table of kinds (flows/host_kinds.h) names the same kinds with the same
 * sync flag; tests/t_host_kinds.c compares the two. Data only: no engine, so a test
 * program links it. */
#ifndef BASAL_WORKER_HOST_APIS_H
#define BASAL_WORKER_HOST_APIS_H

#include <stdbool.h>
#include <stdint.h>

/* Indices into HOST_APIS (the magic of each host function). */
enum api_slot {
    API_KV_GET, API_KV_SET, API_KV_DELETE, API_FS_READ, API_FS_LIST, API_FS_STAT, API_FS_WRITE, API_NET_FETCH, API_GIT_LOG,
    API_GIT_REV_PARSE, API_GIT_DESCRIBE_TAGS, API_GIT_SHOW, API_GIT_DIFF, API_GIT_LS_FILES, API_OPS_CALL, API_SINK_EMIT, API_NOW,
    API_RANDOM,
    API_TOOLS_CALL, API_SLOTS
};


struct host_api {
    const char *kind; /* the HostCall kind */
    uint8_t arity;    /* arguments sent, at most */
    bool sync;        /* now/random: returns a value, blocks on a live call */
};

/* By enum api_slot; HOST_API_COUNT of them. */
extern const struct host_api HOST_APIS[];
extern const unsigned HOST_API_COUNT;

#endif
