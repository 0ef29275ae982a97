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

int lazy_library_load(struct lazy_library *library, char *err, size_t err_cap)
{
    (void)pthread_mutex_lock(&library->lock);
    if (!library->tried) {
        library->result = shared_library_load(library->soname, library->symbols,
                                              library->count, library->error,
                                              sizeof library->error);
        library->tried = true;
    }
    int result = library->result;
    (void)pthread_mutex_unlock(&library->lock);
    if (result != 0 && err != NULL)
        snprintf(err, err_cap, "%s", library->error);
    return result;
}

const char *lazy_library_error(const struct lazy_library *library)
{
    return library->result == 0 ? NULL : library->error;
}
