#include "base/microhttpd_library.h"


#include "base/shared_library.h"

/* libmicrohttpd's ABI has kept this name since 0.9.37 (2014). */
#define LIBMICROHTTPD_SONAME "libmicrohttpd.so.12"

struct microhttpd_library mhd_lib;

static const struct shared_symbol symbols[] = {
    SHARED_SYMBOL(mhd_lib, add_response_header, MHD_add_response_header),
    SHARED_SYMBOL(mhd_lib, create_post_processor, MHD_create_post_processor),
    SHARED_SYMBOL(mhd_lib, create_response_from_buffer, MHD_create_response_from_buffer),
    SHARED_SYMBOL(mhd_lib, create_response_from_buffer_with_free_callback,
                  MHD_create_response_from_buffer_with_free_callback),
    SHARED_SYMBOL(mhd_lib, destroy_post_processor, MHD_destroy_post_processor),
    SHARED_SYMBOL(mhd_lib, destroy_response, MHD_destroy_response),
    SHARED_SYMBOL(mhd_lib, get_daemon_info, MHD_get_daemon_info),
    SHARED_SYMBOL(mhd_lib, lookup_connection_value, MHD_lookup_connection_value),
    SHARED_SYMBOL(mhd_lib, post_process, MHD_post_process),
    SHARED_SYMBOL(mhd_lib, queue_response, MHD_queue_response),
    SHARED_SYMBOL(mhd_lib, start_daemon, MHD_start_daemon),
    SHARED_SYMBOL(mhd_lib, stop_daemon, MHD_stop_daemon),
};

static struct lazy_library library = LAZY_LIBRARY(LIBMICROHTTPD_SONAME, symbols);

int microhttpd_library_load(char *err, size_t err_cap)
{
    return lazy_library_load(&library, err, err_cap);
}
