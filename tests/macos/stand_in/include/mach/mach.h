/* A Linux stand-in for the part of Apple's <mach/mach.h> that src/worker/cpu_timer_macos.c
 * uses (make macos-logic; stand_in.c implements it): a thread's port is an index into
 * the threads' CPU clocks (pthread_getcpuclockid), thread_info(THREAD_BASIC_INFO)
 * reads that clock into user_time. Only the names and types the source uses, not
 * Darwin's layouts: the real declarations are tests/macos/macos_decls.h's. */
#ifndef BASAL_TESTS_MACOS_STAND_IN_MACH_H
#define BASAL_TESTS_MACOS_STAND_IN_MACH_H

#include <pthread.h>

typedef unsigned int mach_port_t;
typedef int kern_return_t;
typedef int integer_t;
typedef unsigned int natural_t;
typedef natural_t mach_msg_type_number_t;
typedef integer_t *thread_info_t;
#define MACH_PORT_NULL 0u
#define KERN_SUCCESS 0
#define KERN_FAILURE 5
#define THREAD_BASIC_INFO 3

typedef struct {
    integer_t seconds;
    integer_t microseconds;
} time_value_t;
typedef struct {
    time_value_t user_time;
    time_value_t system_time;
    integer_t rest[6];
} thread_basic_info_data_t;
#define THREAD_BASIC_INFO_COUNT \
    ((mach_msg_type_number_t)(sizeof(thread_basic_info_data_t) / sizeof(natural_t)))

kern_return_t thread_info(mach_port_t thread, natural_t flavor, thread_info_t out,
                          mach_msg_type_number_t *count);
mach_port_t pthread_mach_thread_np(pthread_t thread);

#endif
