/* Loading a shared library when it is first needed instead of at every start: the
 * parent's libcurl, libmicrohttpd and libsystemd bring 35 of its 43 libraries, which
 * a one-shot command (exec, run, codemode run) never calls, and mapping and relocating
 * them cost more than the rest of its start (docs/benchmarks.md, issue 32). The same
 * search as the dynamic linker's finds the library, so nothing reaches the process
 * that linking it at build time would not have let in. */
#ifndef BASAL_BASE_SHARED_LIBRARY_H
#define BASAL_BASE_SHARED_LIBRARY_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

/* One function of the library: its name and where its address goes (the address of a
 * function pointer of the header's type, see SHARED_SYMBOL). */
struct shared_symbol {
    const char *name;
    void **slot;
};

/* A row of a symbol table for the function pointer field `field` of `table` named
 * like the library's function `name`. */
#define SHARED_SYMBOL(table, field, name) {#name, (void **)(void *)&(table).field}

/* Opens soname (RTLD_NOW | RTLD_LOCAL: nothing of it is bound later or shared with
 * other libraries) and resolves every symbol into its slot. All or nothing: 0, or -1
 * with a one-line reason in err (the library or the symbol missing) and the library
 * closed again. Not thread-safe by itself: lazy_library_load is. */
int shared_library_load(const char *soname, const struct shared_symbol *symbols,
                        size_t count, char *err, size_t err_cap);

/* A library loaded on first use, once per process: the first caller (any thread) tries
 * it, every later caller gets that try's result, so a missing library is looked for
 * once and reported the same way each time. Define one per library with LAZY_LIBRARY
 * and a static const table of SHARED_SYMBOL rows. */
struct lazy_library {
    const char *soname;
    const struct shared_symbol *symbols;
    size_t count;
    pthread_mutex_t lock;
    bool tried;
    int result;
    char error[256];
};

#define LAZY_LIBRARY(soname_, symbols_)                                                 \
    {.soname = (soname_), .symbols = (symbols_),                                        \
     .count = sizeof(symbols_) / sizeof((symbols_)[0]), .lock = PTHREAD_MUTEX_INITIALIZER, \
     .tried = false, .result = -1, .error = ""}

/* Loads the library on the first call: 0 once every symbol is in its slot, or -1 with
 * the one-line reason in err (err may be NULL: lazy_library_error then gives it). */
int lazy_library_load(struct lazy_library *library, char *err, size_t err_cap);

/* The reason the last load failed, or NULL when it succeeded. Only after a load. */
const char *lazy_library_error(const struct lazy_library *library);

#endif
