/* Loading a shared library when it is first needed instead of at every start: the
 * parent's libcurl, libmicrohttpd and libsystemd bring 35 of its 43 libraries, which
 * a one-shot command (exec, run, codemode run) never calls, and mapping and relocating
 * them cost more than the rest of its start (docs/benchmarks.md, issue 32). The same
 * search as the dynamic linker's finds the library, so nothing reaches the process
 * that linking it at build time would not have let in. */
#ifndef BASAL_BASE_SHARED_LIBRARY_H
#define BASAL_BASE_SHARED_LIBRARY_H

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
 * closed again. Not thread-safe by itself: the callers load once (pthread_once). */
int shared_library_load(const char *soname, const struct shared_symbol *symbols,
                        size_t count, char *err, size_t err_cap);

#endif
