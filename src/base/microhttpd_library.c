#include "base/microhttpd_library.h"

#include <pthread.h>
#include <stdio.h>

#include "base/shared_library.h"

/* libmicrohttpd's ABI has kept this name since 0.9.37 (2014). */
#define LIBMICROHTTPD_SONAME "libmicrohttpd.so.12"

struct microhttpd_library mhd_lib;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static int load_result = -1;
static char load_error[256] = "libmicrohttpd was not loaded";

static void load(void)
{
    const struct shared_symbol symbols[] = {
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
    load_result = shared_library_load(LIBMICROHTTPD_SONAME, symbols,
                                      sizeof symbols / sizeof symbols[0], load_error,
                                      sizeof load_error);
}

int microhttpd_library_load(char *err, size_t err_cap)
{
    (void)pthread_once(&load_once, load);
    if (load_result != 0) {
        snprintf(err, err_cap, "%s", load_error);
        return -1;
    }
    return 0;
}
