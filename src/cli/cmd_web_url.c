/* ck-basal web-url: the status page's one-time login URL (docs/web.md). A fresh code
 * goes into the data home's web-login (web/web_auth.h), replacing any unused one; the
 * page of the serve --web running on this data home takes it once. */
#include "cli/commands.h"
#include "base/json_out.h"
#include "serve/serve_lock.h"
#include "store/datahome.h"
#include "web/web_auth.h"

#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

int cmd_web_url(const struct cli_globals *g, int argc, char **argv)
{
    if (argc > 0) {
        fprintf(stderr, "ck-basal web-url: unexpected argument '%s' (web-url takes none)\n",
                argv[0]);
        return EXIT_USAGE;
    }
    char home[PATH_MAX], err[512], base[256], code[WEB_SECRET_HEX + 1];
    if (cli_data_home(g, home, sizeof home, err, sizeof err) != 0 ||
        datahome_prepare(home, false, NULL, err, sizeof err) != 0) {
        fprintf(stderr, "ck-basal web-url: %s\n", err);
        return EXIT_REFUSED;
    }
    /* web-address outlives a serve that was killed: only a live serve's counts. */
    int found = 0;
    if (serve_lock_holder(home) > 0)
        found = web_address_read(home, base, sizeof base, err, sizeof err);
    if (found == 0)
        fprintf(stderr, "ck-basal web-url: no serve --web runs on %s (start ck-basal serve "
                        "--web 127.0.0.1:PORT)\n", home);
    if (found < 0)
        fprintf(stderr, "ck-basal web-url: %s\n", err);
    if (found != 1)
        return EXIT_REFUSED;
    if (web_login_code_new(home, code, err, sizeof err) != 0) {
        fprintf(stderr, "ck-basal web-url: %s\n", err);
        return EXIT_REFUSED;
    }
    char url[sizeof base + 96];
    snprintf(url, sizeof url, "%s/login?code=%s", base, code);
    if (g->json) {
        json_t *o = json_pack("{s:s, s:i}", "url", url, "valid_seconds", WEB_LOGIN_MAX_AGE_S);
        if (o == NULL || json_out_line(stdout, o, JSON_COMPACT) != 0)
            fprintf(stderr, "ck-basal web-url: out of memory\n");
        json_decref(o);
    } else
        puts(url);
    return EXIT_OK;
}
