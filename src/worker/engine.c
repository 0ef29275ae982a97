#include "worker/engine.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prelude_js.h" /* generated from src/worker/prelude.js by the Makefile */
#include "proto/utf8.h"
#include "worker/cpu_timer.h"
#include "worker/engine_harden.h"
#include "worker/engine_internal.h"
#include "worker/engine_outcome.h"
#include "worker/host_bridge.h"
#include "worker/refuse.h"

const uint8_t ENGINE_PRELUDE_SHA256[PROTO_DIGEST_BYTES] = {PRELUDE_JS_SHA256};

/* The script is the body of this function; its line 1 is the wrapper's line 1. */
/* The wrapper has a line of its own, numbered 0 (JS_EVAL_FLAG_FIRST_LINE_ZERO, patch
 * 0007), so the script's lines and columns are its own. */
static const char SCRIPT_HEAD[] = "(async function () {\n";
static const char SCRIPT_TAIL[] = "\n})";
/* What errors call a script whose Activate names none. */
static const char SCRIPT_NAME[] = "script.js";

/* The activation's end, from whatever state the loop left it in. */
static void decide_end(struct engine *engine)
{
    JSContext *ctx = engine->ctx;
    /* Deciding may run script code (toJSON, getters): none of it may reach the host. */
    bridge_close(engine);
    if (engine_decide_if_budget(engine))
        return;
    if (engine->result_state == RESULT_REJECTED) {
        /* An uncaught budget error is the budget's even if the journal has more. */
        if (engine_is_internal_error(ctx, engine->result, "stack overflow") ||
            (engine->budget.alloc_failures > 0 &&
             engine_is_internal_error(ctx, engine->result, "out of memory"))) {
            engine_decide_thrown(engine, engine->result, FAIL_SCRIPT_ERROR);
            return;
        }
    }
    char pending[PROTO_MAX_DETAIL_BYTES];
    if (engine->result_state != RESULT_PENDING &&
        bridge_prefix_pending(engine, pending, sizeof pending)) {
        engine_fail(engine, FAIL_NONDETERMINISM, "%s", pending);
        return;
    }
    if (engine->result_state == RESULT_REJECTED)
        engine_decide_thrown(engine, engine->result, FAIL_SCRIPT_ERROR);
    else if (engine->result_state == RESULT_FULFILLED)
        engine_decide_result(engine);
    else
        engine_fail(engine, FAIL_ENGINE, "the activation ended without an outcome");
}

/* ------------------------------------------------------------------ lockdown helpers */

static JSValue code_from_strings_disabled(JSContext *ctx, JSValueConst new_target, int argc,
                                          JSValueConst *argv)
{
    (void)new_target;
    (void)argc;
    (void)argv;
    return JS_ThrowTypeError(ctx, "code generation from strings is disabled");
}

/* basal.disableConstructor(prototype, name): prototype.constructor becomes a function
 * of that name that throws, whose .prototype is prototype. */
static JSValue js_disable_constructor(JSContext *ctx, JSValueConst this_val, int argc,
                                      JSValueConst *argv)
{
    (void)this_val;
    if (argc < 2 || !JS_IsObject(argv[0]))
        return JS_ThrowTypeError(ctx, "disableConstructor(prototype, name)");
    const char *name = JS_ToCString(ctx, argv[1]);
    if (name == NULL)
        return JS_EXCEPTION;
    JSValue stand_in = JS_NewCFunction2(ctx, code_from_strings_disabled, name, 1,
                                        JS_CFUNC_constructor_or_func, 0);
    JS_FreeCString(ctx, name);
    if (JS_IsException(stand_in))
        return stand_in;
    JS_SetConstructor(ctx, stand_in, argv[0]);
    return stand_in;
}

/* The host-backed Date: the engine's Date, with the current time from the host. */
static JSValue js_host_date(JSContext *ctx, JSValueConst new_target, int argc,
                            JSValueConst *argv)
{
    struct engine *engine = JS_GetContextOpaque(ctx);
    if (!JS_IsUndefined(new_target) && argc > 0)
        return JS_CallConstructor2(ctx, engine->native_date, new_target, argc, argv);
    JSValue now = bridge_now(ctx, JS_UNDEFINED, 0, NULL);
    if (JS_IsException(now))
        return now;
    JSValue date;
    if (!JS_IsUndefined(new_target)) {
        date = JS_CallConstructor2(ctx, engine->native_date, new_target, 1,
                                   (JSValueConst *)&now);
        JS_FreeValue(ctx, now);
        return date;
    }
    /* Date() called as a function: the current time as a string. */
    date = JS_CallConstructor(ctx, engine->native_date, 1, (JSValueConst *)&now);
    JS_FreeValue(ctx, now);
    if (JS_IsException(date))
        return date;
    JSValue text = JS_Call(ctx, engine->date_to_string, date, 0, NULL);
    JS_FreeValue(ctx, date);
    return text;
}

/* basal.hostDate(EngineDate): keeps the engine's Date here, returns the stand-in. */
static JSValue js_make_host_date(JSContext *ctx, JSValueConst this_val, int argc,
                                 JSValueConst *argv)
{
    (void)this_val;
    struct engine *engine = JS_GetContextOpaque(ctx);
    if (argc < 1 || !JS_IsConstructor(ctx, argv[0]) || !JS_IsUndefined(engine->native_date))
        return JS_ThrowTypeError(ctx, "hostDate(Date)");
    JSValue prototype = JS_GetPropertyStr(ctx, argv[0], "prototype");
    if (JS_IsException(prototype))
        return prototype;
    JSValue to_string = JS_GetPropertyStr(ctx, prototype, "toString");
    JS_FreeValue(ctx, prototype);
    if (JS_IsException(to_string))
        return to_string;
    engine->native_date = JS_DupValue(ctx, argv[0]);
    engine->date_to_string = to_string;
    return JS_NewCFunction2(ctx, js_host_date, "Date", 7, JS_CFUNC_constructor_or_func, 0);
}

static JSValue js_harden(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
    (void)this_val;
    for (int i = 0; i < argc; i++) {
        if (engine_harden(ctx, argv[i]) < 0)
            return JS_EXCEPTION;
    }
    return JS_UNDEFINED;
}

static JSValue js_harden_bindings(JSContext *ctx, JSValueConst this_val, int argc,
                                  JSValueConst *argv)
{
    (void)this_val;
    if (argc < 1 || !JS_IsObject(argv[0]))
        return JS_ThrowTypeError(ctx, "hardenBindings(object)");
    return engine_harden_bindings(ctx, argv[0]) < 0 ? JS_EXCEPTION : JS_UNDEFINED;
}

static const JSCFunctionListEntry LOCKDOWN_HELPERS[] = {
    JS_CFUNC_DEF("disableConstructor", 2, js_disable_constructor),
    JS_CFUNC_DEF("hostDate", 1, js_make_host_date),
    JS_CFUNC_DEF("now", 0, bridge_now),
    JS_CFUNC_DEF("random", 0, bridge_random),
    JS_CFUNC_DEF("harden", 0, js_harden),
    JS_CFUNC_DEF("hardenBindings", 1, js_harden_bindings),
};

/* The prelude compiled once per process, by the first engine, before any script has
 * run; later engines read this bytecode instead of parsing the source again (about
 * 6 us against 80 us). JS_ReadObject is only ever given these bytes, which this
 * process wrote itself: nothing a script controls reaches it. */
static uint8_t *prelude_bytecode;
static size_t prelude_bytecode_len;

static JSValue load_prelude(JSContext *ctx)
{
    JSValue compiled;
    if (prelude_bytecode != NULL) {
        compiled = JS_ReadObject(ctx, prelude_bytecode, prelude_bytecode_len,
                                 JS_READ_OBJ_BYTECODE);
    } else {
        compiled = JS_Eval(ctx, (const char *)PRELUDE_JS, sizeof PRELUDE_JS - 1, "prelude.js",
                           JS_EVAL_TYPE_GLOBAL | JS_EVAL_FLAG_COMPILE_ONLY);
        if (JS_IsException(compiled))
            return compiled;
        size_t len = 0;
        uint8_t *bytes = JS_WriteObject(ctx, &len, compiled, JS_WRITE_OBJ_BYTECODE);
        if (bytes != NULL) {
            prelude_bytecode = malloc(len);
            if (prelude_bytecode != NULL) {
                memcpy(prelude_bytecode, bytes, len);
                prelude_bytecode_len = len;
            }
            js_free(ctx, bytes);
        } else {
            JS_FreeValue(ctx, JS_GetException(ctx)); /* parse it again next time */
        }
    }
    if (JS_IsException(compiled))
        return compiled;
    return JS_EvalFunction(ctx, compiled);
}

/* Runs the prelude (src/worker/prelude.js) with the helpers. */
static int lockdown(struct engine *engine)
{
    JSContext *ctx = engine->ctx;
    JSValue prelude = load_prelude(ctx);
    if (JS_IsException(prelude))
        return -1;
    JSValue helpers = JS_NewObject(ctx);
    if (JS_IsException(helpers)) {
        JS_FreeValue(ctx, prelude);
        return -1;
    }
    JS_SetPropertyFunctionList(ctx, helpers, LOCKDOWN_HELPERS,
                               sizeof LOCKDOWN_HELPERS / sizeof LOCKDOWN_HELPERS[0]);
    JSValue ret = JS_Call(ctx, prelude, JS_UNDEFINED, 1, (JSValueConst *)&helpers);
    JS_FreeValue(ctx, helpers);
    JS_FreeValue(ctx, prelude);
    if (JS_IsException(ret))
        return -1;
    JS_FreeValue(ctx, ret);
    return 0;
}

/* ------------------------------------------------------------------ engine */

void engine_free(struct engine *engine)
{
    if (engine == NULL)
        return;
    if (engine->ctx != NULL) {
        JSContext *ctx = engine->ctx;
        bridge_free(engine);
        JS_FreeValue(ctx, engine->promise_then);
        JS_FreeValue(ctx, engine->native_date);
        JS_FreeValue(ctx, engine->date_to_string);
        JS_FreeValue(ctx, engine->result);
        if (engine->value_cstr != NULL)
            JS_FreeCString(ctx, engine->value_cstr);
#ifdef BASAL_TEST_HOOKS
        /* Test builds free the context and runtime object by object first, so QuickJS's
         * own check that nothing is left alive (a reference our C code leaked) runs in
         * the suite. */
        JS_FreeContext(ctx);
        engine->ctx = NULL;
#endif
    }
#ifdef BASAL_TEST_HOOKS
    if (engine->rt != NULL)
        JS_FreeRuntime(engine->rt);
#endif
    /* Everything of the runtime lives on its own heap: given back in one step, with no
     * garbage collection and no free of each object (engine_heap.h). */
    budget_release_heap(&engine->budget);
    free(engine);
}

struct engine *engine_prepare(enum engine_mode mode)
{
    struct engine *engine = calloc(1, sizeof *engine);
    if (engine == NULL)
        return NULL;
    budget_init(&engine->budget);
    engine->mode = mode;
    engine->promise_then = JS_UNDEFINED;
    engine->native_date = JS_UNDEFINED;
    engine->date_to_string = JS_UNDEFINED;
    engine->result = JS_UNDEFINED;
    engine->rt = JS_NewRuntime2(&BUDGET_MALLOC_FUNCTIONS, &engine->budget);
    if (engine->rt == NULL)
        goto fail;
    JS_SetInterruptHandler(engine->rt, budget_interrupt, &engine->budget);
    /* The CPU timer's tick makes the next poll call budget_interrupt (patch 0003). */
    JS_SetInterruptFlag(engine->rt, cpu_timer_tick_flag());
    /* No module loader is installed: import() rejects ("could not load module"). */
    engine->ctx = JS_NewContext(engine->rt);
    if (engine->ctx == NULL)
        goto fail;
    JSContext *ctx = engine->ctx;
    JS_SetContextOpaque(ctx, engine);
#ifdef BASAL_TEST_HOOKS
    if (mode == ENGINE_PLAIN) {
        /* What qjs --bignum adds, for QuickJS's own test_bignum.js. */
        JS_AddIntrinsicBigFloat(ctx);
        JS_AddIntrinsicBigDecimal(ctx);
        JS_AddIntrinsicOperators(ctx);
        JS_EnableBignumExt(ctx, 1);
    }
#endif
    /* Primordials the engine uses after the script may have run. */
    JSValue promise = JS_NewPendingPromise(ctx);
    if (JS_IsException(promise))
        goto fail_exception;
    engine->promise_then = JS_GetPropertyStr(ctx, promise, "then");
    JS_FreeValue(ctx, promise);
    if (JS_IsException(engine->promise_then))
        goto fail_exception;
    if (mode == ENGINE_LOCKED && lockdown(engine) < 0)
        goto fail_exception;
    return engine;

fail_exception: {
    JSValue error = JS_GetException(engine->ctx);
    char why[512];
    engine_describe_exception(engine->ctx, error, true, why, sizeof why - 1);
    JS_FreeValue(engine->ctx, error);
    stderr_printf("ck-basal-worker: cannot prepare the engine: %s\n", why);
}
fail:
    engine_free(engine);
    return NULL;
}

/* The settlement of the script's promise. */
static JSValue js_settled(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv,
                          int magic)
{
    (void)this_val;
    struct engine *engine = JS_GetContextOpaque(ctx);
    if (engine->result_state == RESULT_PENDING) {
        engine->result_state = (enum result_state)magic;
        engine->result = argc > 0 ? JS_DupValue(ctx, argv[0]) : JS_UNDEFINED;
    }
    return JS_UNDEFINED;
}

/* Compiles the wrapped script, calls it and watches its promise with the intrinsic
 * then (a script that replaces Promise.prototype.then changes nothing here). */
static int start_script(struct engine *engine)
{
    JSContext *ctx = engine->ctx;
    const struct proto_text *script = &engine->activation->script;
    size_t len = sizeof SCRIPT_HEAD - 1 + script->len + sizeof SCRIPT_TAIL - 1;
    char *text = malloc(len + 1);
    if (text == NULL) {
        engine_fail(engine, FAIL_ENGINE, "out of memory for a %zu-byte script", script->len);
        return -1;
    }
    memcpy(text, SCRIPT_HEAD, sizeof SCRIPT_HEAD - 1);
    if (script->len > 0)
        memcpy(text + sizeof SCRIPT_HEAD - 1, script->str, script->len);
    memcpy(text + sizeof SCRIPT_HEAD - 1 + script->len, SCRIPT_TAIL, sizeof SCRIPT_TAIL);
    const struct proto_text *script_name = &engine->activation->script_name;
    bool compile_only = engine->activation->compile_only;
    JSValue function = JS_Eval(ctx, text, len, script_name->len > 0 ? script_name->str : SCRIPT_NAME,
                               JS_EVAL_TYPE_GLOBAL | JS_EVAL_FLAG_FIRST_LINE_ZERO |
                                   (compile_only ? JS_EVAL_FLAG_COMPILE_ONLY : 0));
    free(text);
    if (JS_IsException(function)) {
        JSValue error = JS_GetException(ctx);
        JSValue name = engine_string_property(ctx, error, "name");
        const char *name_str = JS_IsUndefined(name) ? NULL : JS_ToCString(ctx, name);
        bool syntax = name_str != NULL && strcmp(name_str, "SyntaxError") == 0;
        JS_FreeCString(ctx, name_str);
        JS_FreeValue(ctx, name);
        engine_decide_thrown(engine, error, syntax ? FAIL_SYNTAX_ERROR : FAIL_SCRIPT_ERROR);
        JS_FreeValue(ctx, error);
        return -1;
    }
    if (compile_only) { /* it compiled: nothing of it runs, the outcome is null */
        JS_FreeValue(ctx, function);
        engine->result_state = RESULT_FULFILLED;
        engine->result = JS_NULL;
        return 0;
    }
    JSValue returned = JS_Call(ctx, function, JS_UNDEFINED, 0, NULL);
    JS_FreeValue(ctx, function);
    bool threw = JS_IsException(returned);
    if (threw)
        returned = JS_GetException(ctx);

    JSValue promise = JS_NewPendingPromise(ctx);
    if (JS_IsException(promise)) {
        JS_FreeValue(ctx, returned);
        return -1; /* out of memory: decided by the budget */
    }
    JS_SettlePromise(ctx, promise, threw, returned);
    JS_FreeValue(ctx, returned);
    JSValue handlers[2] = {
        JS_NewCFunctionMagic(ctx, js_settled, "fulfilled", 1, JS_CFUNC_generic_magic,
                             RESULT_FULFILLED),
        JS_NewCFunctionMagic(ctx, js_settled, "rejected", 1, JS_CFUNC_generic_magic,
                             RESULT_REJECTED),
    };
    JSValue ret = JS_Call(ctx, engine->promise_then, promise, 2, (JSValueConst *)handlers);
    int rc = JS_IsException(ret) ? -1 : 0;
    JS_FreeValue(ctx, ret);
    JS_FreeValue(ctx, handlers[0]);
    JS_FreeValue(ctx, handlers[1]);
    JS_FreeValue(ctx, promise);
    if (rc < 0)
        JS_FreeValue(ctx, JS_GetException(ctx));
    return rc;
}

/* Runs pending jobs until none is left, the script's promise settles or the
 * activation must stop. */
static void run_jobs(struct engine *engine)
{
    while (!engine_stopping(engine) && engine->result_state == RESULT_PENDING) {
        JSContext *job_ctx = NULL;
        int ran = JS_ExecutePendingJob(engine->rt, &job_ctx);
        if (ran == 0)
            return;
        if (ran < 0) {
            /* Only the promise machinery itself failing gets here (reactions turn
             * exceptions into rejections): out of memory, or the interrupt. */
            JSValue error = JS_GetException(job_ctx);
            bridge_close(engine); /* describing it may run getters */
            if (!engine_stopping(engine))
                engine_decide_thrown(engine, error, FAIL_SCRIPT_ERROR);
            JS_FreeValue(engine->ctx, error);
        }
    }
}

static void run_loop(struct engine *engine)
{
    for (;;) {
        run_jobs(engine);
        if (engine_stopping(engine) || engine->result_state != RESULT_PENDING ||
            budget_cpu_check(&engine->budget))
            return;
        int released = bridge_release_next(engine);
        if (released < 0)
            return;
        if (released > 0 || bridge_apply_buffered(engine) > 0)
            continue;
        switch (bridge_waiting(engine)) {
        case WAIT_LIVE:
            bridge_wait(engine);
            break;
        case WAIT_LONG_RUNNING_ONLY:
            if (!engine_decide_if_budget(engine))
                engine_decide(engine, PROTO_OUTCOME_SUSPENDED);
            return;
        case WAIT_NOTHING:
            if (!engine_decide_if_budget(engine))
                engine_decide(engine, PROTO_OUTCOME_STALLED);
            return;
        }
    }
}

bool engine_run(struct engine *engine, const struct proto_activate *activation,
                const struct engine_io *io, struct proto_finished *out, char *refusal,
                size_t cap)
{
    engine->activation = activation;
    engine->io = io;
    if (!bridge_begin(engine, refusal, cap)) {
        bridge_free(engine);
        engine->activation = NULL;
        return false;
    }
    engine->used = true;
    int rc = bridge_install_api(engine);
    budget_start(&engine->budget, engine->rt, &activation->budgets);
    if (rc == 0 && bridge_install_trigger(engine) == 0 && start_script(engine) == 0)
        run_loop(engine);
    budget_cpu_check(&engine->budget);
    decide_end(engine);
    budget_end(&engine->budget);
    *out = engine->finished;
    return true;
}
