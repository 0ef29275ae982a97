/* Deep freezing ("hardening") of the intrinsics, the script's API and the trigger.
 *
 * The walk is iterative (an explicit stack on the runtime's heap, so it also counts
 * against the heap budget and never recurses on the native stack, whatever the depth
 * of a trigger payload). An object already non-extensible is taken as done: the walk
 * makes each object non-extensible before it looks at its properties.
 *
 * Through the public API, freezing an intrinsic object instantiates every method
 * QuickJS creates lazily (about 400 functions in a fresh context). A QuickJS build
 * carrying the JS_HardenReachable patch freezes without instantiating them (they are
 * created frozen on first use); it is used when quickjs.h declares it. */
#include <stdbool.h>

#include "worker/engine_harden.h"

#ifdef JS_HAVE_HARDEN_REACHABLE

int engine_harden(JSContext *ctx, JSValueConst root)
{
    return JS_HardenReachable(ctx, root, 0);
}

int engine_harden_bindings(JSContext *ctx, JSValueConst obj)
{
    return JS_HardenReachable(ctx, obj, JS_HARDEN_ROOT_EXTENSIBLE);
}

#else /* the public API only */

struct harden_stack {
    JSValue *items;
    size_t count;
    size_t cap;
};

/* Takes over value; pushes it if it is an object still to harden. */
static int push(JSContext *ctx, struct harden_stack *stack, JSValue value)
{
    if (!JS_IsObject(value)) {
        JS_FreeValue(ctx, value);
        return 0;
    }
    if (stack->count == stack->cap) {
        size_t cap = stack->cap ? stack->cap * 2 : 64;
        JSValue *grown = js_realloc_rt(JS_GetRuntime(ctx), stack->items, cap * sizeof *grown);
        if (grown == NULL) {
            JS_FreeValue(ctx, value);
            JS_ThrowOutOfMemory(ctx);
            return -1;
        }
        stack->items = grown;
        stack->cap = cap;
    }
    stack->items[stack->count++] = value;
    return 0;
}

static void free_stack(JSContext *ctx, struct harden_stack *stack)
{
    while (stack->count > 0)
        JS_FreeValue(ctx, stack->items[--stack->count]);
    js_free_rt(JS_GetRuntime(ctx), stack->items);
    stack->items = NULL;
    stack->cap = 0;
}

/* Makes every own property of obj non-configurable (data properties also
 * non-writable) and pushes the objects they hold, except obj itself (the global
 * object holds itself as globalThis). */
static int freeze_properties(JSContext *ctx, struct harden_stack *stack, JSValueConst obj)
{
    JSPropertyEnum *props = NULL;
    uint32_t count = 0;
    if (JS_GetOwnPropertyNames(ctx, &props, &count, obj, JS_GPN_STRING_MASK | JS_GPN_SYMBOL_MASK) <
        0)
        return -1;
    int rc = 0;
    for (uint32_t i = 0; i < count && rc == 0; i++) {
        JSPropertyDescriptor desc;
        int found = JS_GetOwnProperty(ctx, &desc, obj, props[i].atom);
        if (found < 0) {
            rc = -1;
            break;
        }
        if (found == 0)
            continue;
        int flags = JS_PROP_HAS_CONFIGURABLE;
        if (!(desc.flags & JS_PROP_GETSET))
            flags |= JS_PROP_HAS_WRITABLE;
        if (JS_DefineProperty(ctx, obj, props[i].atom, JS_UNDEFINED, JS_UNDEFINED, JS_UNDEFINED,
                              flags) < 0)
            rc = -1;
        if (JS_IsObject(desc.value) &&
            JS_VALUE_GET_PTR(desc.value) == JS_VALUE_GET_PTR(obj)) {
            JS_FreeValue(ctx, desc.value);
            desc.value = JS_UNDEFINED;
        }
        /* push takes each value over, even when it fails */
        int pushed = push(ctx, stack, desc.value);
        pushed |= push(ctx, stack, desc.getter);
        pushed |= push(ctx, stack, desc.setter);
        if (pushed < 0)
            rc = -1;
    }
    for (uint32_t i = 0; i < count; i++)
        JS_FreeAtom(ctx, props[i].atom);
    js_free(ctx, props);
    return rc;
}

static int harden_pushed(JSContext *ctx, struct harden_stack *stack)
{
    while (stack->count > 0) {
        JSValue obj = stack->items[--stack->count];
        int extensible = JS_IsExtensible(ctx, obj);
        int rc = extensible;
        if (extensible > 0) {
            rc = JS_PreventExtensions(ctx, obj);
            if (rc >= 0)
                rc = freeze_properties(ctx, stack, obj);
            if (rc >= 0)
                rc = push(ctx, stack, JS_GetPrototype(ctx, obj));
        }
        JS_FreeValue(ctx, obj);
        if (rc < 0)
            return -1;
    }
    return 0;
}

int engine_harden(JSContext *ctx, JSValueConst root)
{
    struct harden_stack stack = {NULL, 0, 0};
    int rc = push(ctx, &stack, JS_DupValue(ctx, root));
    if (rc == 0)
        rc = harden_pushed(ctx, &stack);
    free_stack(ctx, &stack);
    return rc;
}

int engine_harden_bindings(JSContext *ctx, JSValueConst obj)
{
    struct harden_stack stack = {NULL, 0, 0};
    int rc = freeze_properties(ctx, &stack, obj);
    if (rc == 0)
        rc = harden_pushed(ctx, &stack);
    free_stack(ctx, &stack);
    return rc;
}

#endif
