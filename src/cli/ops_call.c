/* cli_ops_call: see cli/ops_call.h. */
#include "cli/ops_call.h"
#include "cli/term_text.h"
#include "serve/ops_client.h"
#include "serve/ops_dispatch.h"
#include "store/store.h"

#include <jansson.h>
#include <limits.h>
#include <stdio.h>

json_t *cli_ops_request(const char *cmd, json_t *args)
{
    json_t *request = json_object();
    if (request == NULL || args == NULL) {
        json_decref(request);
        json_decref(args);
        return NULL;
    }
    json_object_set_new(request, "cmd", json_string(cmd));
    json_object_set_new(request, "args", args);
    return request;
}

/* The reply's data, or its error printed and its exit status. A reply that is not of
 * the documented shape is refused (a serve's reply is input too). */
static int take_reply(const char *what, json_t *reply, json_t **data)
{
    const json_t *ok = json_object_get(reply, "ok");
    if (json_is_true(ok) && json_object_get(reply, "data") != NULL) {
        *data = json_incref(json_object_get(reply, "data"));
        return EXIT_OK;
    }
    const json_t *exit_value = json_object_get(reply, "exit");
    const char *error = json_string_value(json_object_get(reply, "error"));
    if (!json_is_false(ok) || error == NULL || !json_is_integer(exit_value) ||
        (json_integer_value(exit_value) != EXIT_REFUSED &&
         json_integer_value(exit_value) != EXIT_USAGE)) {
        term_error_line(what, reply == NULL ? "out of memory" : "malformed reply");
        return EXIT_REFUSED;
    }
    term_error_line(what, error);
    return (int)json_integer_value(exit_value);
}

int cli_ops_connect(const struct cli_globals *g, const char *what, char *home, int *fd)
{
    char err[512];
    if (cli_data_home(g, home, PATH_MAX, err, sizeof err) != 0) {
        term_error_line(what, err);
        return -1;
    }
    int served = ops_client_connect(home, fd, err, sizeof err);
    if (served < 0)
        term_error_line(what, err);
    return served;
}

int cli_ops_send(const char *what, int fd, json_t *request, json_t **data)
{
    *data = NULL;
    void *reply = NULL;
    char err[512];
    if (ops_client_call(fd, request, &reply, -1, err, sizeof err) != 0) {
        term_error_line(what, err);
        return EXIT_REFUSED;
    }
    int status = take_reply(what, reply, data);
    json_decref(reply);
    return status;
}

int cli_ops_call(const struct cli_globals *g, const char *what, json_t *request,
                 json_t **data)
{
    *data = NULL;
    if (request == NULL) {
        term_error_line(what, "out of memory");
        return EXIT_REFUSED;
    }
    /* A serve on the data home answers (it has the live figures and admits the runs);
     * without one, this process answers on the store, the same way. */
    char home[PATH_MAX];
    int fd = -1;
    int served = cli_ops_connect(g, what, home, &fd);
    if (served < 0)
        return EXIT_REFUSED;
    if (served == 1)
        return cli_ops_send(what, fd, request, data);
    struct store *st;
    if (cli_open_store(g, what, &st, home) != 0)
        return EXIT_REFUSED;
    const struct ops_context ctx = {st, home, NULL};
    json_t *reply = ops_dispatch(&ctx, request);
    store_close(st);
    int status = take_reply(what, reply, data);
    json_decref(reply);
    return status;
}
