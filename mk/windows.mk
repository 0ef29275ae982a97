# Windows (issue 27; sandbox.md "Windows"; docs/platforms.md "Windows"): `make windows`
# cross-builds with Debian's mingw-w64 (scripts/install-deps.sh --test) into
# build/windows/bin:
#   ck-basal-worker.exe  QuickJS (build/quickjs, our patches) and the worker's engine
#                        and protocol sources; the Linux confinement (seccomp, Landlock,
#                        descriptors, startup checks, probes) is replaced by the
#                        *_windows.c parts behind the same headers
#   ck-basal.exe         the parent's Windows launcher and worker-check (below)
# PE32+, GUI subsystem for the worker, -Werror, the hardening mingw supports.
# `make windows-check` runs tests/t_windows.sh under Wine.

WIN        := build/windows
WIN_CC     := x86_64-w64-mingw32-gcc
WIN_AR     := x86_64-w64-mingw32-ar
# __USE_MINGW_ANSI_STDIO: C99 printf (%zu) instead of msvcrt's; _WIN32_WINNT 0x0A00:
# Windows 10 (AppContainer, the mitigation policies, PROC_THREAD_ATTRIBUTE_JOB_LIST);
# mk/windows/include: <sys/uio.h> (writev), which mingw lacks; malloc_usable_size is
# msvcrt's _msize. Format checks: mingw's gcc reads format(printf) as msvcrt's printf,
# which has no %zu, while this build links mingw's C99 printf; the same format strings
# are checked by gcc and clang in the Linux build, so here the check is off.
WIN_WARN   := $(filter-out -Wformat=2 -Wformat-security,$(WARN)) -Wno-format
WIN_CFLAGS := -std=gnu11 -O2 -g -D_GNU_SOURCE -D__USE_MINGW_ANSI_STDIO=1 -D_WIN32_WINNT=0x0A00 \
              -DUNICODE -D_UNICODE -Dmalloc_usable_size=_msize $(WIN_WARN) -fstack-protector-strong \
              -D_FORTIFY_SOURCE=2 -Isrc -isystem $(Q) -Ibuild/gen -isystem mk/windows/include -MMD -MP
WIN_QFLAGS := $(filter-out -fPIE,$(QFLAGS))
WIN_LDFLAGS := -static -Wl,--dynamicbase,--nxcompat,--high-entropy-va -fstack-protector-strong
WIN_QLIB   := $(WIN)/lib/libquickjs.a
WIN_WORKER := $(WIN)/bin/ck-basal-worker.exe
WIN_PARENT := $(WIN)/bin/ck-basal.exe
win_objs    = $(patsubst %.c,$(WIN)/obj/%.o,$(1))

# Linux's confinement and its Linux-only helpers: not in the Windows worker (their
# Windows counterparts are the *_windows.c files platform_src picks).
WIN_LINUX_ONLY := src/worker/descriptors.c src/worker/landlock.c src/worker/probes.c \
                  src/worker/seccomp_policy.c src/worker/startup_checks.c \
                  src/worker/engine_sha256.c src/worker/cpu_timer.c
WIN_WORKER_SRC := $(filter-out $(WIN_LINUX_ONLY),$(call platform_src,$(WORKER_ALL_SRC),windows))
WIN_WORKER_LIBS := -Wl,--subsystem,windows -lbcrypt -lntdll -ladvapi32 -lssp -lwinpthread

$(WIN)/obj/%.o: %.c | $(Q)/.fetched build/gen/version.h build/gen/prelude_js.h
	@mkdir -p $(dir $@)
	$(WIN_CC) $(WIN_CFLAGS) -c $< -o $@

-include $(shell find $(WIN)/obj -name '*.d' 2>/dev/null)

$(WIN_QLIB): $(Q)/.fetched
	@mkdir -p $(WIN)/lib/qobj
	for f in $(QSRC); do $(WIN_CC) $(WIN_QFLAGS) -c $(Q)/$$f -o $(WIN)/lib/qobj/$${f%.c}.o || exit 1; done
	$(WIN_AR) rcs $@ $(addprefix $(WIN)/lib/qobj/,$(QSRC:.c=.o))

$(WIN_WORKER): $(call win_objs,$(WIN_WORKER_SRC) $(PROTO_SRC)) $(WIN_QLIB)
	@mkdir -p $(dir $@)
	$(WIN_CC) $(WIN_LDFLAGS) $^ -o $@ $(WIN_WORKER_LIBS)

windows: $(WIN_WORKER)
.PHONY: windows
