#include "proto/lpac_token.h"

#include <stdio.h>
#include <string.h>
#include <wchar.h>

#define REFUSE(...)                                                                          \
    do {                                                                                     \
        snprintf(why, why_cap, __VA_ARGS__);                                                 \
        return false;                                                                        \
    } while (0)

/* Reads a variable-size token information class into buf (cap bytes). */
static bool token_info(HANDLE token, TOKEN_INFORMATION_CLASS what, void *buf, DWORD cap)
{
    DWORD got = 0;
    return GetTokenInformation(token, what, buf, cap, &got) != 0;
}

DWORD lpac_token_integrity(HANDLE token)
{
    _Alignas(8) unsigned char buf[256];
    if (!token_info(token, TokenIntegrityLevel, buf, sizeof buf))
        return (DWORD)-1;
    PSID sid = ((const TOKEN_MANDATORY_LABEL *)(const void *)buf)->Label.Sid;
    UCHAR count = *GetSidSubAuthorityCount(sid);
    return count == 0 ? (DWORD)-1 : *GetSidSubAuthority(sid, (DWORD)count - 1);
}

static bool is_null_sid(PSID sid)
{
    SID_IDENTIFIER_AUTHORITY null_authority = SECURITY_NULL_SID_AUTHORITY;
    PSID null_sid = NULL;
    if (!AllocateAndInitializeSid(&null_authority, 1, SECURITY_NULL_RID, 0, 0, 0, 0, 0, 0, 0,
                                  &null_sid))
        return false;
    bool same = EqualSid(sid, null_sid) != 0;
    FreeSid(null_sid);
    return same;
}

/* The security attribute an LPAC token carries: it is not a member of ALL APPLICATION
 * PACKAGES (PROCESS_CREATION_ALL_APPLICATION_PACKAGES_OPT_OUT at creation). */
static bool has_lpac_attribute(HANDLE token)
{
    /* Local, not static: the launcher may check tokens from several threads. */
    _Alignas(8) unsigned char buf[4096];
    if (!token_info(token, TokenSecurityAttributes, buf, sizeof buf))
        return false;
    const CLAIM_SECURITY_ATTRIBUTES_INFORMATION *info = (const void *)buf;
    for (DWORD i = 0; i < info->AttributeCount; i++) {
        const CLAIM_SECURITY_ATTRIBUTE_V1 *a = &info->Attribute.pAttributeV1[i];
        if (a->Name != NULL && wcscmp(a->Name, L"WIN://NOALLAPPPKG") == 0)
            return true;
    }
    return false;
}

bool lpac_token_shape_ok(HANDLE token, char *why, size_t why_cap)
{
    DWORD is_app_container = 0;
    if (!token_info(token, TokenIsAppContainer, &is_app_container, sizeof is_app_container) ||
        is_app_container == 0)
        REFUSE("the token is not an AppContainer token");
    if (!has_lpac_attribute(token))
        REFUSE("the token lacks WIN://NOALLAPPPKG (not a Less Privileged AppContainer)");
    _Alignas(8) unsigned char buf[8192];
    if (!token_info(token, TokenCapabilities, buf, sizeof buf) ||
        ((const TOKEN_GROUPS *)(const void *)buf)->GroupCount != 0)
        REFUSE("the token has capabilities (or they cannot be read)");
    if (!token_info(token, TokenPrivileges, buf, sizeof buf) ||
        ((const TOKEN_PRIVILEGES *)(const void *)buf)->PrivilegeCount != 0)
        REFUSE("the token has privileges (or they cannot be read)");
    if (!token_info(token, TokenRestrictedSids, buf, sizeof buf))
        REFUSE("the restricting SIDs cannot be read");
    const TOKEN_GROUPS *restricting = (const void *)buf;
    if (restricting->GroupCount == 0)
        REFUSE("the token is not restricted (no restricting SID)");
    for (DWORD i = 0; i < restricting->GroupCount; i++)
        if (!is_null_sid(restricting->Groups[i].Sid))
            REFUSE("a restricting SID other than the NULL SID");
    if (!token_info(token, TokenGroups, buf, sizeof buf))
        REFUSE("the token's groups cannot be read");
    const TOKEN_GROUPS *groups = (const void *)buf;
    for (DWORD i = 0; i < groups->GroupCount; i++) {
        DWORD attributes = groups->Groups[i].Attributes;
        if ((attributes & SE_GROUP_INTEGRITY) != 0)
            continue; /* the label, checked as the integrity level */
        if ((attributes & SE_GROUP_USE_FOR_DENY_ONLY) == 0)
            REFUSE("group %lu of %lu is not deny-only", (unsigned long)i,
                   (unsigned long)groups->GroupCount);
    }
    return true;
}
