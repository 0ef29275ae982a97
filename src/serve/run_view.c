#include "serve/run_view.h"

#include "base/json_js.h"
#include "store/runs.h"

#include <jansson.h>

void *run_view_json(const struct run_report *rep)
{
    json_t *o = json_object();
    json_object_set_new(o, "run", json_integer(rep->run_id));
    json_object_set_new(o, "flow", json_string(rep->flow_id));
    json_object_set_new(o, "state", json_string(run_state_name(rep->state)));
    json_t *result = rep->result != NULL ? json_js_loads(rep->result, JSON_DECODE_ANY, NULL)
                                         : NULL; /* 1e19 too */
    json_object_set_new(o, "result", result != NULL ? result : json_null());
    json_object_set_new(o, "error", rep->error != NULL ? json_string(rep->error) : json_null());
    json_object_set_new(o, "host_calls", json_integer(rep->host_calls));
    json_object_set_new(o, "replayed", json_integer(rep->replayed));
    json_object_set_new(o, "wall_ms", json_integer(rep->wall_ms));
    json_t *view = json_object();
    if (view == NULL || o == NULL) {
        json_decref(o);
        json_decref(view);
        return NULL;
    }
    json_object_set_new(view, "run", o);
    json_object_set_new(view, "result_text",
                        rep->result != NULL ? json_string(rep->result) : json_null());
    return view;
}
