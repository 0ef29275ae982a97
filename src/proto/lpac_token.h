/* The shape of the worker's Less Privileged AppContainer token (sandbox.md "Windows"),
 * checked on the actual token by both binaries: the launcher on the suspended worker's
 * primary and initial-thread tokens before resume (supervisor/worker_launch_windows.c),
 * the worker on its own primary before its first read (worker/confine_windows.c). One
 * check, so the two sides cannot drift. Windows only (lpac_token_windows.c). */
#ifndef BASAL_PROTO_LPAC_TOKEN_H
#define BASAL_PROTO_LPAC_TOKEN_H

#include <stdbool.h>
#include <stddef.h>
#include <windows.h>

/* The one AppContainer profile every worker runs in (sandbox.md: "All workers reuse the
 * cortexkit.basal.worker AppContainer profile"). */
#define LPAC_PROFILE_NAME L"cortexkit.basal.worker"

/* True if token (opened with TOKEN_QUERY) is an AppContainer token, LPAC (it carries
 * WIN://NOALLAPPPKG: not a member of ALL APPLICATION PACKAGES), with zero capabilities,
 * no privileges, at least one restricting SID and only the NULL SID among them, and
 * every group but its integrity label deny-only. Else false with a one-line reason. */
bool lpac_token_shape_ok(HANDLE token, char *why, size_t why_cap);

/* The token's integrity level as its label's last RID (SECURITY_MANDATORY_LOW_RID,
 * ..._UNTRUSTED_RID), or (DWORD)-1 if it cannot be read. */
DWORD lpac_token_integrity(HANDLE token);

#endif
