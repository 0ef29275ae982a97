/* libmicrohttpd, loaded when serve first listens for HTTP (/metrics or the status
 * page; base/shared_library.h says why): the functions basal calls, with the types
 * of its own header. Call them as mhd_lib.start_daemon() and so on, only after
 * microhttpd_library_load succeeded. */
#ifndef BASAL_BASE_MICROHTTPD_LIBRARY_H
#define BASAL_BASE_MICROHTTPD_LIBRARY_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <microhttpd.h>

struct microhttpd_library {
    __typeof__(MHD_add_response_header) *add_response_header;
    __typeof__(MHD_create_post_processor) *create_post_processor;
    __typeof__(MHD_create_response_from_buffer) *create_response_from_buffer;
    __typeof__(MHD_create_response_from_buffer_with_free_callback)
        *create_response_from_buffer_with_free_callback;
    __typeof__(MHD_destroy_post_processor) *destroy_post_processor;
    __typeof__(MHD_destroy_response) *destroy_response;
    __typeof__(MHD_get_daemon_info) *get_daemon_info;
    __typeof__(MHD_lookup_connection_value) *lookup_connection_value;
    __typeof__(MHD_post_process) *post_process;
    __typeof__(MHD_queue_response) *queue_response;
    __typeof__(MHD_start_daemon) *start_daemon;
    __typeof__(MHD_stop_daemon) *stop_daemon;
};

/* Filled once by microhttpd_library_load; read-only after. */
extern struct microhttpd_library mhd_lib;

/* Loads libmicrohttpd (once per process; any thread). 0, or -1 with a one-line reason
 * in err: then nothing can listen and the caller refuses to start. */
int microhttpd_library_load(char *err, size_t err_cap);

#endif
