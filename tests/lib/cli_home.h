/* The CLI as a test drives it: `ck-basal [--json] --home HOME args...` with a chosen
 * environment and stdin, a flow written, installed and approved, and the --json
 * output parsed. Every C test that runs the CLI goes through here, so they read alike.
 * serve_home.h builds its struct test_home on these. */
#ifndef BASAL_TESTS_CLI_HOME_H
#define BASAL_TESTS_CLI_HOME_H

#include "harness.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define CLI_TIMEOUT_MS 120000

/* An argv list for the calls below: ARGS("flow", "install", dir). */
#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})

struct cli_opts {
    bool json;          /* --json before --home */
    char *const *envp;  /* NULL: the test's environment; HARNESS_EMPTY_ENV: none */
    const char *input;  /* stdin text, or NULL for none */
    const char *parent; /* the ck-basal to run; NULL: harness_test_parent() */
    int timeout_ms;     /* 0: CLI_TIMEOUT_MS */
    const char *const *prefix; /* words before the parent (a launcher and its flags) or NULL */
};

#define CLI_MAX_ARGS 32

/* Fills argv (cap entries, NULL-ended) with `PARENT [--json] [--home HOME] args...`
 * (parent NULL: harness_test_parent(); home NULL: no --home), for a test that starts
 * the CLI with proc_start and looks at it while it runs. Extra args are cut at cap. */
void cli_argv(const char **argv, size_t cap, const char *parent, bool json, const char *home,
              const char *const *args);

/* Runs the CLI on home (NULL: no --home) with args (NULL-ended, at most CLI_MAX_ARGS). */
struct proc_result cli_run(const char *home, const struct cli_opts *opts,
                           const char *const *args);
/* Starts the same command without waiting (stdin, stdout and stderr piped, as
 * proc_start does): for a test that signals or watches the CLI while it runs.
 * opts->input and opts->timeout_ms are not used; proc_finish collects the result. */
int cli_start(struct proc *p, const char *home, const struct cli_opts *opts,
              const char *const *args);
/* cli_run with an empty environment and no stdin: how most tests call it. */
struct proc_result cli_home(const char *home, bool json, const char *const *args);

/* `setup` on home (an empty environment), then home/modules.json (0600) holding
 * modules_json unless it is NULL. False with the reason in why (why_cap > 0). */
bool cli_home_setup(const char *home, const char *modules_json, char *why, size_t why_cap);
/* cli_home_setup with the modules.json that modules_fmt and its arguments make (a
 * catalog naming this run's test programs and logs); "not ok - name: <why>" when it
 * fails, so a scenario can go on and fail where it needs the home. */
__attribute__((format(printf, 3, 4))) bool cli_home_setup_or_fail(const char *home,
                                                                 const char *name,
                                                                 const char *modules_fmt, ...);

/* A command line the CLI refuses: exit code, and one line on stderr holding err, nothing
 * on stdout. */
struct cli_refusal {
    const char *name;
    const char *const *args;
    int code;
    const char *err;
};
/* Runs each row's args on home as cli_home does and checks the refusal, named by the row. */
void cli_expect_refusals(const char *home, const struct cli_refusal *rows, size_t count);

/* Makes dir (if absent) and writes manifest.json and flow.js into it. */
bool flow_dir_write(const char *dir, const char *manifest_json, const char *script);

/* How far cli_install_approve got: a test reports the install and the approve as
 * checks of its own, so it needs to know which step failed. */
enum flow_added { FLOW_ADDED, FLOW_INSTALL_FAILED, FLOW_APPROVE_FAILED };

/* `flow install DIR` (--json; its code_hash), then `flow approve ID --version V
 * --code-hash H`, both with envp (as in cli_opts). On failure why holds the failed
 * step's exit and stderr (why may be NULL). */
enum flow_added cli_install_approve(const char *home, char *const *envp, const char *dir,
                                    const char *id, int version, char *why, size_t why_cap);

/* The command's stdout as JSON (any value), or NULL if it is not JSON. */
json_t *cli_output_json(const struct proc_result *r);
/* o[key] as a string, or "(none)": for checks and their details. */
const char *json_str_of(const json_t *o, const char *key);
/* v as compact JSON, or "(none)", in a static buffer (for a check's detail). */
const char *json_dumped(const json_t *v);
/* Removes "wall_ms":N from a --json line in place (it differs between any two runs), so
 * a test can compare two runs' output as text. */
void cli_output_drop_wall(char *text);

#endif
