/* The floor for the contenders benchmark: the same QuickJS build basal uses
 * (build/lib/libquickjs.a), evaluating in this process with a fresh runtime and context
 * per execution and a native host function. No process, no confinement.
 *
 *   floor w1 N    N executions of workload 1; prints one line per execution: microseconds
 *   floor w2 N    the same with 100 calls of the native host function inc() per execution
 *   floor once    one execution of workload 1; prints its result (for the cold start)
 *
 * When BENCH_START_AT (CLOCK_MONOTONIC, microseconds) is set, the measured executions
 * start at that time (after the warm-up) and the last line is "# end T" (CLOCK_MONOTONIC
 * µs after the last one), so that two processes started together are two streams.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "quickjs.h"

#define BODY1 "let s = 0; for (let i = 0; i < 1000; i++) s += i; return s;"
#define BODY2 "let s = 0; for (let i = 0; i < 1000; i++) s += i; " \
              "let c = 0; for (let j = 0; j < 100; j++) c = inc(); return s;"

static long long counter;

static JSValue js_inc(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
    (void)this_val; (void)argc; (void)argv;
    return JS_NewInt64(ctx, ++counter);
}

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

/* One execution: fresh runtime + context, (host function), eval, result, free. */
static long long run_once(const char *src, int host)
{
    JSRuntime *rt = JS_NewRuntime();
    JSContext *ctx = JS_NewContext(rt);
    if (!rt || !ctx) { fprintf(stderr, "floor: out of memory\n"); exit(1); }
    if (host) {
        JSValue g = JS_GetGlobalObject(ctx);
        JS_SetPropertyStr(ctx, g, "inc", JS_NewCFunction(ctx, js_inc, "inc", 0));
        JS_FreeValue(ctx, g);
    }
    JSValue v = JS_Eval(ctx, src, strlen(src), "<floor>", JS_EVAL_TYPE_GLOBAL);
    int64_t r = -1;
    if (JS_IsException(v) || JS_ToInt64(ctx, &r, v) < 0) { fprintf(stderr, "floor: script failed\n"); exit(1); }
    JS_FreeValue(ctx, v);
    JS_FreeContext(ctx);
    JS_FreeRuntime(rt);
    return r;
}

int main(int argc, char **argv)
{
    const char *w1 = "(function () { " BODY1 " })()";
    const char *w2 = "(function () { " BODY2 " })()";
    if (argc == 2 && strcmp(argv[1], "once") == 0) {
        printf("%lld\n", run_once(w1, 0));
        return 0;
    }
    if (argc != 3 || (strcmp(argv[1], "w1") != 0 && strcmp(argv[1], "w2") != 0)) {
        fprintf(stderr, "usage: floor w1|w2 N | floor once\n");
        return 2;
    }
    int host = strcmp(argv[1], "w2") == 0;
    long n = strtol(argv[2], NULL, 10);
    for (int i = 0; i < 20; i++) run_once(host ? w2 : w1, host); /* warm-up, not counted */
    const char *start_at = getenv("BENCH_START_AT");
    if (start_at != NULL)
        for (double t = strtod(start_at, NULL); now_us() < t;)
            usleep(50);
    for (long i = 0; i < n; i++) {
        double t0 = now_us();
        long long r = run_once(host ? w2 : w1, host);
        double t1 = now_us();
        if (r != 499500) { fprintf(stderr, "floor: wrong result %lld\n", r); return 1; }
        printf("%.3f\n", t1 - t0);
    }
    if (start_at != NULL)
        printf("# end %.3f\n", now_us());
    return 0;
}
