/* What the Windows worker uses of the native API and CNG that mingw-w64's headers (the
 * Debian gcc-mingw-w64 12 package) do not declare, each as its source documents it:
 *   ProcessHandleInformation (51), PROCESS_HANDLE_TABLE_ENTRY_INFO and
 *   PROCESS_HANDLE_SNAPSHOT_INFORMATION: Windows SDK ntpsapi.h / phnt (processinfo),
 *   documented by Microsoft for NtQueryInformationProcess since Windows 8;
 *   ObjectNameInformation's OBJECT_NAME_INFORMATION: Windows DDK ntifs.h/wdm.h;
 *   BCRYPT_SHA256_ALG_HANDLE: Windows SDK bcrypt.h (a pseudo-handle, Windows 10+).
 * Only Windows sources include it (worker/confine_windows.c, worker/engine_sha256_windows.c). */
#ifndef BASAL_WORKER_NT_DECLARATIONS_WINDOWS_H
#define BASAL_WORKER_NT_DECLARATIONS_WINDOWS_H

#include <windows.h>
#include <bcrypt.h>
#include <winternl.h>

#define NT_PROCESS_HANDLE_INFORMATION ((PROCESSINFOCLASS)51)
#define NT_OBJECT_NAME_CLASS ((OBJECT_INFORMATION_CLASS)1)
#define NT_STATUS_INFO_LENGTH_MISMATCH ((NTSTATUS)0xC0000004L)

typedef struct nt_process_handle_table_entry_info {
    HANDLE HandleValue;
    ULONG_PTR HandleCount;
    ULONG_PTR PointerCount;
    ACCESS_MASK GrantedAccess;
    ULONG ObjectTypeIndex;
    ULONG HandleAttributes;
    ULONG Reserved;
} NT_PROCESS_HANDLE_TABLE_ENTRY_INFO;

typedef struct nt_process_handle_snapshot_information {
    ULONG_PTR NumberOfHandles;
    ULONG_PTR Reserved;
    NT_PROCESS_HANDLE_TABLE_ENTRY_INFO Handles[1];
} NT_PROCESS_HANDLE_SNAPSHOT_INFORMATION;

typedef struct nt_object_name_information {
    UNICODE_STRING Name;
} NT_OBJECT_NAME_INFORMATION;

#ifndef OBJ_INHERIT
#define OBJ_INHERIT 0x00000002L
#endif

#ifndef BCRYPT_SHA256_ALG_HANDLE
#define BCRYPT_SHA256_ALG_HANDLE ((BCRYPT_ALG_HANDLE)0x00000041)
#endif

#endif
