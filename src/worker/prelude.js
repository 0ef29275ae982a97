/* The lockdown prelude of ck-basal-worker (docs/engine.md, "Lockdown").
 *
 * Evaluated once in every fresh flow or codemode context, before the activation's
 * script exists, as a function called with `basal`: native helpers that are reachable
 * from nothing once this returns. Welcome reports the SHA-256 of this file's bytes as
 * prelude_hash. Dynamic import() needs nothing here: the engine installs no module
 * loader, so every import() rejects. */
(function lockdown(basal) {
    "use strict";
    const global = globalThis;
    const { defineProperty, getPrototypeOf } = Object;
    const { deleteProperty } = Reflect;

    // Code from strings. Each constructor reachable through a function prototype is
    // replaced by one that throws; the global eval and Function go.
    // (Plain loops, literals and calls throughout: this runs for every activation, and
    // iterators, spreads and destructuring cost it measurable time.)
    const FunctionPrototype = getPrototypeOf(function () {});
    const AsyncFunctionPrototype = getPrototypeOf(async function () {});
    const GeneratorFunctionPrototype = getPrototypeOf(function* () {});
    const AsyncGeneratorFunctionPrototype = getPrototypeOf(async function* () {});
    basal.disableConstructor(FunctionPrototype, "Function");
    basal.disableConstructor(AsyncFunctionPrototype, "AsyncFunction");
    basal.disableConstructor(GeneratorFunctionPrototype, "GeneratorFunction");
    basal.disableConstructor(AsyncGeneratorFunctionPrototype, "AsyncGeneratorFunction");

    // Not part of the language a script sees: code from strings, shared memory, the
    // engine's own clock (__date_clock), and what QuickJS lacks but a later engine may
    // bring (weak references, timers).
    const removed = ["eval", "Function", "Atomics", "SharedArrayBuffer", "__date_clock",
                     "WeakRef", "FinalizationRegistry", "setTimeout", "setInterval",
                     "clearTimeout", "clearInterval", "setImmediate", "queueMicrotask"];
    for (let i = 0; i < removed.length; i++) {
        if (!deleteProperty(global, removed[i]))
            throw new TypeError("lockdown: cannot remove " + removed[i]);
    }

    // Time and randomness come from the host, as the synchronous host calls "now" and
    // "random", so a replay sees the values the journal recorded. The engine's Date
    // stays behind the host-backed one: every path to a constructor leads to the
    // latter, which calls the engine's only with explicit arguments.
    const EngineDate = global.Date;
    const HostDate = basal.hostDate(EngineDate);
    const method = (value) => ({ value, writable: true, enumerable: false, configurable: true });
    defineProperty(HostDate, "prototype", { value: EngineDate.prototype });
    defineProperty(EngineDate.prototype, "constructor", method(HostDate));
    defineProperty(HostDate, "now", method(basal.now));
    defineProperty(HostDate, "parse", method(EngineDate.parse));
    defineProperty(HostDate, "UTC", method(EngineDate.UTC));
    defineProperty(global, "Date", method(HostDate));
    defineProperty(Math, "random", method(basal.random));

    // Freeze every intrinsic: what the global object holds (its bindings become
    // read-only, the object itself stays open for the script's own globals), and the
    // prototypes a script reaches only through values the language makes.
    basal.harden(
        FunctionPrototype,
        AsyncFunctionPrototype,
        GeneratorFunctionPrototype,
        AsyncGeneratorFunctionPrototype,
        getPrototypeOf([][Symbol.iterator]()),
        getPrototypeOf(new Map()[Symbol.iterator]()),
        getPrototypeOf(new Set()[Symbol.iterator]()),
        getPrototypeOf(""[Symbol.iterator]()),
        getPrototypeOf(/(?:)/[Symbol.matchAll]("")),
    );
    basal.hardenBindings(global);
})
