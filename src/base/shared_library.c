#include "base/shared_library.h"

#include <dlfcn.h>
#include <stdio.h>

int shared_library_load(const char *soname, const struct shared_symbol *symbols,
                        size_t count, char *err, size_t err_cap)
{
    void *library = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        const char *why = dlerror();
        snprintf(err, err_cap, "cannot load %s: %s", soname, why != NULL ? why : "unknown");
        return -1;
    }
    for (size_t i = 0; i < count; i++) {
        void *address = dlsym(library, symbols[i].name);
        if (address == NULL) {
            snprintf(err, err_cap, "%s has no %s", soname, symbols[i].name);
            for (size_t j = 0; j < i; j++)
                *symbols[j].slot = NULL;
            dlclose(library);
            return -1;
        }
        *symbols[i].slot = address;
    }
    return 0; /* the library stays loaded for the life of the process */
}
