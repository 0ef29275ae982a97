/* The worker's list of host calls (see host_apis.h). */
#include "worker/host_apis.h"

const struct host_api HOST_APIS[] = {
    [API_KV_GET] = {"kv.get", 1, false},
    [API_KV_SET] = {"kv.set", 2, false},
    [API_KV_DELETE] = {"kv.delete", 1, false},
    [API_FS_READ] = {"fs.read", 2, false},
    [API_FS_LIST] = {"fs.list", 1, false},
    [API_FS_STAT] = {"fs.stat", 1, false},
    [API_FS_WRITE] = {"fs.write", 2, false},
    [API_NET_FETCH] = {"net.fetch", 2, false},
    [API_GIT_LOG] = {"git.log", 2, false},
    [API_GIT_REV_PARSE] = {"git.revParse", 2, false},
    [API_GIT_DESCRIBE_TAGS] = {"git.describeTags", 2, false},
    [API_GIT_SHOW] = {"git.show", 3, false},
    [API_GIT_DIFF] = {"git.diff", 4, false},
    [API_GIT_LS_FILES] = {"git.lsFiles", 2, false},
    [API_OPS_CALL] = {"ops.call", 3, false},
    [API_SINK_EMIT] = {"sink.emit", 2, false},
    [API_NOW] = {"now", 0, true},
    [API_RANDOM] = {"random", 0, true},
    [API_TOOLS_CALL] = {"tool.call", 2, false},
};
const unsigned HOST_API_COUNT = API_SLOTS;
