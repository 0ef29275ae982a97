# basal build. Three variants of our code share one QuickJS static library:
#   build/bin     release: what operators run (no test hooks)
#   build/test    test build: -DBASAL_TEST_HOOKS, switches that exist only for tests
#   build/asan    ASan + UBSan build of the parent, the codec and the tests
# The worker is never built with sanitizers: their runtimes need system calls the
# seccomp allowlist refuses, so build/asan/bin holds the test-build worker beside it.

CC       ?= gcc
Q        := build/quickjs
QLIB     := build/lib/libquickjs.a

WARN     := -Wall -Wextra -Werror -Wformat=2 -Wformat-security -Wshadow -Wstrict-prototypes \
            -Wmissing-prototypes -Wvla -Wpointer-arith -Wcast-qual -Wnull-dereference
HARDEN   := -fstack-protector-strong -fstack-clash-protection -fcf-protection -fPIE \
            -D_FORTIFY_SOURCE=2 -fno-strict-aliasing
BASEFLAGS := -std=gnu11 -O2 -g -D_GNU_SOURCE $(WARN) $(HARDEN) -Isrc -isystem $(Q) -Ibuild/gen -MMD -MP
LDHARDEN := -pie -Wl,-z,relro,-z,now -Wl,-z,noexecstack

QFLAGS   := -std=gnu11 -O2 -g -fwrapv -D_GNU_SOURCE -DCONFIG_VERSION='"2021-03-27"' \
            -DCONFIG_BIGNUM -fPIE -fstack-protector-strong -w
QSRC     := quickjs.c libregexp.c libunicode.c cutils.c libbf.c

# One file per operating system behind one header per part (confine.h,
# worker_launch.h): NAME_linux.c, NAME_windows.c, NAME_macos.c. platform_src keeps of
# a folder's files the shared ones and OS's own (mk/windows.mk passes windows).
PLATFORMS  := linux windows macos
platform_src = $(filter-out $(foreach p,$(PLATFORMS),%_$(p).c),$(1)) $(filter %_$(2).c,$(1))
PROTO_ALL_SRC := $(wildcard src/proto/*.c)
PROTO_SRC  := $(call platform_src,$(PROTO_ALL_SRC),linux)
WORKER_ALL_SRC := $(wildcard src/worker/*.c)
WORKER_SRC := $(call platform_src,$(WORKER_ALL_SRC),linux)
BASE_SRC   := $(wildcard src/base/*.c)
SUPERVISOR_ALL_SRC := $(wildcard src/supervisor/*.c)
SUPERVISOR_SRC := $(call platform_src,$(SUPERVISOR_ALL_SRC),linux)
STORE_SRC  := $(wildcard src/store/*.c)
FLOWS_SRC  := $(wildcard src/flows/*.c)
SERVE_SRC  := $(wildcard src/serve/*.c)
WEB_SRC    := $(wildcard src/web/*.c)
# Everything of the parent below its command line (src/README.md has the order).
CORE_SRC   := $(BASE_SRC) $(SUPERVISOR_SRC) $(STORE_SRC) $(FLOWS_SRC) $(WEB_SRC) $(SERVE_SRC)
HOST_SRC   := $(wildcard src/host/*.c)
CLI_ALL_SRC := $(wildcard src/cli/*.c)
CLI_SRC    := $(call platform_src,$(CLI_ALL_SRC),linux)
CK_SRC     := $(wildcard src/ck/*.c)
# ck (setup, upgrade) links only what it uses of the parent: the data home's default,
# the serve lock, the ops client and their helpers; SQLite for the store's schema and
# its snapshot (store_backup), jansson for the ops replies and ck-basal --version --json.
CK_MODULES := src/base/error_line.c src/base/clock.c src/base/socket_send.c src/store/datahome.c src/store/store_backup.c \
              src/serve/serve_lock.c src/serve/ops_client.c
CK_LIBS    := -lsqlite3 -ljansson
TEST_SRC   := $(wildcard tests/t_*.c)
TESTLIB_SRC := $(wildcard tests/lib/*.c)
TOOL_SRC   := $(wildcard tests/tools/*.c)

# The worker is a static PIE (still position independent, so still randomized): no
# dynamic loader runs at its start, which was a third of the time from exec to Welcome
# (mapping and relocating libc, libm and libseccomp; docs/benchmarks.md, "spawn"). It
# uses nothing of glibc that needs the loader (no NSS, no dlopen). libcrypto it uses
# only for SHA-256 (the host-call argument digests). A glibc, libseccomp or libcrypto
# update reaches the worker with the next build.
WORKER_LIBS := -static-pie -lseccomp -lcrypto -lm
# libcurl, libmicrohttpd and libsystemd are not linked: the parent loads each when it
# first needs it (dlopen, base/shared_library.h), so a one-shot command does not map
# their 35 libraries; only their headers are needed to build. libseccomp, SQLite,
# jansson and libcrypto are linked statically (Debian's own .a files), like the
# worker's: only what is used comes in (of libcrypto SHA-256, the web's HMAC, base64),
# and the loader neither maps them nor resolves their symbols, about 0.6 ms of a cold
# command for libcrypto and 0.3-0.5 ms for the other three (docs/benchmarks.md, issue
# 32). An update of one of them reaches ck-basal with the next build
# (docs/operations.md). serve runs its runs on threads.
PARENT_LIBS := -Wl,-Bstatic -lseccomp -lsqlite3 -ljansson -lcrypto -Wl,-Bdynamic -lpthread -lm -ldl

# variant(name, extra cflags, extra ldflags)
define variant
$(1)_OBJ = build/$(1)/obj
$(1)_BIN = build/$(1)/bin
$(1)_CFLAGS = $(BASEFLAGS) $(2)
$(1)_LDFLAGS = $(LDHARDEN) $(3)

build/$(1)/obj/%.o: %.c
	@mkdir -p $$(dir $$@)
	$$(CC) $$($(1)_CFLAGS) -c $$< -o $$@

-include $$(shell find build/$(1)/obj -name '*.d' 2>/dev/null)
endef

$(eval $(call variant,release,,))
$(eval $(call variant,test,-DBASAL_TEST_HOOKS,))
SAN_CFLAGS := -DBASAL_TEST_HOOKS -fsanitize=address,undefined -fno-omit-frame-pointer \
              -fno-sanitize-recover=all -U_FORTIFY_SOURCE
SAN_LDFLAGS := -fsanitize=address,undefined
$(eval $(call variant,asan,$$(SAN_CFLAGS),$$(SAN_LDFLAGS)))

# libpq's header (Debian's libpq-dev), for the PostgreSQL engine alone: libpq itself is
# not linked but loaded at the first connection (store/sql_postgres.c).
PG_INCLUDE := -isystem /usr/include/postgresql
$(foreach v,release test asan,$(eval build/$(v)/obj/src/store/sql_postgres.o: $(v)_CFLAGS += $(PG_INCLUDE)))

objs = $(patsubst %.c,build/$(1)/obj/%.o,$(2))

RELEASE_WORKER := build/bin/ck-basal-worker
RELEASE_PARENT := build/bin/ck-basal
TEST_WORKER    := build/test/bin/ck-basal-worker
TEST_PARENT    := build/test/bin/ck-basal
ASAN_PARENT    := build/asan/bin/ck-basal
ASAN_WORKER    := build/asan/bin/ck-basal-worker
RELEASE_CK     := build/bin/ck
TEST_CK        := build/test/bin/ck
ASAN_CK        := build/asan/bin/ck

TEST_BINS  := $(patsubst tests/%.c,build/test/tests/%,$(TEST_SRC))
ASAN_TESTS := $(patsubst tests/%.c,build/asan/tests/%,$(TEST_SRC))
TOOL_BINS  := $(patsubst tests/tools/%.c,build/test/tools/%,$(TOOL_SRC))

# Plain `make` builds both release binaries: `all` is the default goal, whatever rule
# comes first below (tests/t_make_default.sh checks it).
.DEFAULT_GOAL := all
# make ARCH=aarch64: the arm64 release binaries instead (mk/aarch64.mk).
ifeq ($(ARCH),aarch64)
.DEFAULT_GOAL := aarch64
else ifneq ($(ARCH),)
$(error ARCH=$(ARCH): only ARCH=aarch64 is a cross build; the native build takes no ARCH)
endif
.PHONY: FORCE all test-build check test bench bench-build lint fuzz clean quickjs \
        install uninstall man-check dist
all: $(RELEASE_WORKER) $(RELEASE_PARENT) $(RELEASE_CK)

build/gen/version.h: | $(Q)/.fetched

# version.h changes only when the version or the git revision does, so a commit
# rebuilds just the files that print them.
build/gen/version.h: FORCE
	@mkdir -p build/gen
	@rev=$$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown); \
	 printf '#define BASAL_VERSION "%s"\n#define BASAL_GIT_REV "%s"\n' "$$(cat VERSION)" "$$rev" > $@.tmp; \
	 cmp -s $@.tmp $@ && rm -f $@.tmp || mv $@.tmp $@
FORCE:

# The worker's lockdown prelude, embedded as bytes, with its SHA-256 for
# Welcome.prelude_hash computed here so the worker needs no hash at startup.
build/gen/prelude_js.h: src/worker/prelude.js
	@mkdir -p build/gen
	@{ echo '/* generated from $< by the Makefile: do not edit */'; \
	   printf '#define PRELUDE_JS_SHA256 '; sha256sum $< | cut -c1-64 | sed 's/../0x&,/g; s/,$$//'; \
	   echo 'static const unsigned char PRELUDE_JS[] = {'; \
	   od -An -v -tx1 $< | sed 's/ \([0-9a-f][0-9a-f]\)/0x\1,/g'; \
	   echo '0x00};'; } > $@.tmp && mv $@.tmp $@
$(foreach v,release test asan,build/$(v)/obj/src/worker/engine.o): build/gen/prelude_js.h

quickjs: $(Q)/.fetched
# The script itself decides: it re-extracts only when the pinned tarball or the
# patch series changed (its stamp records both).
$(Q)/.fetched: FORCE
	scripts/fetch-quickjs.sh

$(QLIB): $(Q)/.fetched
	@mkdir -p build/lib/qobj
	for f in $(QSRC); do $(CC) $(QFLAGS) -c $(Q)/$$f -o build/lib/qobj/$${f%.c}.o || exit 1; done
	ar rcs $@ $(addprefix build/lib/qobj/,$(QSRC:.c=.o))

# Our objects include quickjs.h, as a system header (-isystem) that -MMD does not
# track, so a new extraction (another patch series) rebuilds them all.
$(foreach v,release test asan,$(call objs,$(v),$(PROTO_SRC) $(WORKER_SRC) $(CORE_SRC) $(HOST_SRC) $(CLI_SRC) $(CK_SRC) $(TEST_SRC) $(TESTLIB_SRC) $(TOOL_SRC))): $(Q)/.fetched | build/gen/version.h

$(RELEASE_WORKER): $(call objs,release,$(WORKER_SRC) $(PROTO_SRC)) $(QLIB)
	@mkdir -p $(dir $@)
	$(CC) $(release_LDFLAGS) $^ -o $@ $(WORKER_LIBS)
$(RELEASE_PARENT): $(call objs,release,$(CLI_SRC) $(CORE_SRC) $(HOST_SRC) $(PROTO_SRC))
	@mkdir -p $(dir $@)
	$(CC) $(release_LDFLAGS) $^ -o $@ $(PARENT_LIBS)

$(TEST_WORKER): $(call objs,test,$(WORKER_SRC) $(PROTO_SRC)) $(QLIB)
	@mkdir -p $(dir $@)
	$(CC) $(test_LDFLAGS) $^ -o $@ $(WORKER_LIBS)
$(TEST_PARENT): $(call objs,test,$(CLI_SRC) $(CORE_SRC) $(HOST_SRC) $(PROTO_SRC))
	@mkdir -p $(dir $@)
	$(CC) $(test_LDFLAGS) $^ -o $@ $(PARENT_LIBS)
$(ASAN_PARENT): $(call objs,asan,$(CLI_SRC) $(CORE_SRC) $(HOST_SRC) $(PROTO_SRC))
	@mkdir -p $(dir $@)
	$(CC) $(asan_LDFLAGS) $^ -o $@ $(PARENT_LIBS)
$(ASAN_WORKER): $(TEST_WORKER)
	@mkdir -p $(dir $@)
	cp $< $@.tmp && mv -f $@.tmp $@
$(RELEASE_CK): $(call objs,release,$(CK_SRC) $(CK_MODULES))
	@mkdir -p $(dir $@)
	$(CC) $(release_LDFLAGS) $^ -o $@ $(CK_LIBS)
$(TEST_CK): $(call objs,test,$(CK_SRC) $(CK_MODULES))
	@mkdir -p $(dir $@)
	$(CC) $(test_LDFLAGS) $^ -o $@ $(CK_LIBS)
$(ASAN_CK): $(call objs,asan,$(CK_SRC) $(CK_MODULES))
	@mkdir -p $(dir $@)
	$(CC) $(asan_LDFLAGS) $^ -o $@ $(CK_LIBS)

# Each test program links the parent's modules (not its main) and the test library.
PARENT_MODULES = $(CORE_SRC) $(HOST_SRC) $(PROTO_SRC) $(filter-out src/cli/main.c,$(CLI_SRC))
# Worker tables the tests compare with documents and the worker's behaviour.
TEST_WORKER_MODULES = src/worker/seccomp_policy.c src/worker/probes.c src/worker/refuse.c \
                      src/worker/descriptors.c src/worker/engine_heap.c src/worker/host_apis.c \
                      src/worker/handle_inventory.c
build/test/tests/%: build/test/obj/tests/%.o $(call objs,test,$(PARENT_MODULES) $(TESTLIB_SRC) $(TEST_WORKER_MODULES))
	@mkdir -p $(dir $@)
	$(CC) $(test_LDFLAGS) $^ -o $@ $(PARENT_LIBS)
build/asan/tests/%: build/asan/obj/tests/%.o $(call objs,asan,$(PARENT_MODULES) $(TESTLIB_SRC) $(TEST_WORKER_MODULES))
	@mkdir -p $(dir $@)
	$(CC) $(asan_LDFLAGS) $^ -o $@ $(PARENT_LIBS)
build/test/tools/%: build/test/obj/tests/tools/%.o $(call objs,test,$(TESTLIB_SRC) $(PROTO_SRC))
	@mkdir -p $(dir $@)
	$(CC) $(test_LDFLAGS) $^ -o $@ $(PARENT_LIBS)
# The subverted worker confines itself with the real worker's sequence (and links
# nothing of its engine), so the parent accepts it like ck-basal-worker.
EVIL_WORKER_MODULES = src/worker/confine_linux.c src/worker/cpu_timer.c src/worker/descriptors.c \
                      src/worker/landlock.c src/worker/refuse.c src/worker/seccomp_policy.c \
                      src/worker/startup_checks.c
build/test/tools/evil_worker: build/test/obj/tests/tools/evil_worker.o $(call objs,test,$(EVIL_WORKER_MODULES) $(PROTO_SRC))
	@mkdir -p $(dir $@)
	$(CC) $(test_LDFLAGS) $^ -o $@ -lseccomp

# The exporter of the worker's filter (tests/tools/export_filter.c; mk/aarch64.mk runs
# its arm64 build) links the policy table as the worker does.
build/test/tools/export_filter: build/test/obj/tests/tools/export_filter.o $(call objs,test,src/worker/seccomp_policy.c)
	@mkdir -p $(dir $@)
	$(CC) $(test_LDFLAGS) $^ -o $@ -lseccomp

include mk/aarch64.mk
include mk/macos.mk
include mk/windows.mk

# The arm64 cross build is part of the test build: t_syscall_table checks its filter,
# t_aarch64.sh its binaries.
# A test program that runs the ops dispatcher in its own process starts workers
# "beside itself" as ck-basal does (flow install has one compile the script).
SIDE_WORKERS := build/test/tests/ck-basal-worker build/asan/tests/ck-basal-worker
build/test/tests/ck-basal-worker: $(TEST_WORKER)
	@mkdir -p $(@D)
	ln -sf ../bin/ck-basal-worker $@
build/asan/tests/ck-basal-worker: $(ASAN_WORKER)
	@mkdir -p $(@D)
	ln -sf ../bin/ck-basal-worker $@

test-build: all aarch64 windows windows-test-build $(TEST_WORKER) $(TEST_PARENT) $(TEST_CK) $(ASAN_PARENT) $(ASAN_WORKER) $(ASAN_CK) $(TEST_BINS) $(ASAN_TESTS) $(TOOL_BINS) $(SIDE_WORKERS)

# The whole suite: builds every variant, runs every test, lint and the fuzz smoke run.
check: test-build
	tests/run.sh

test: check

lint:
	scripts/lint.sh

# Benchmark programs (bench/NAME.c -> build/bench/NAME) link the release parent's
# modules and the QuickJS library (for the in-process floor). Not tests: they print
# numbers beside goals and pass or fail nothing. docs/benchmarks.md has the results.
BENCH_SRC  := $(wildcard bench/*.c)
BENCH_BINS := $(patsubst bench/%.c,build/bench/%,$(BENCH_SRC))
BENCHLIB_SRC := $(wildcard bench/lib/*.c)
BENCH_MODULES = $(CORE_SRC) $(HOST_SRC) $(PROTO_SRC) $(BENCHLIB_SRC)
$(call objs,release,$(BENCH_SRC) $(BENCHLIB_SRC)): | $(Q)/.fetched build/gen/version.h
build/bench/%: build/release/obj/bench/%.o $(call objs,release,$(BENCH_MODULES)) $(QLIB)
	@mkdir -p $(dir $@)
	$(CC) $(release_LDFLAGS) $^ -o $@ $(PARENT_LIBS)

# flows_install has a worker beside the program compile the script (as SIDE_WORKERS).
build/bench/ck-basal-worker: $(RELEASE_WORKER)
	@mkdir -p $(@D)
	ln -sf ../bin/ck-basal-worker $@

bench-build: all $(BENCH_BINS) build/bench/ck-basal-worker

# Builds the release binaries and the benchmarks, runs them (about 45 s) and writes
# docs/benchmarks.md; then the comparison with other ways to run the same scripts
# (about 80 s; installs quickjs-emscripten and bubblewrap if missing) writes
# docs/benchmarks-contenders.md and its table into docs/benchmarks.md.
bench: bench-build
	bench/run.sh
	bench/contenders/run.sh

# A longer fuzz run than the suite's smoke run: make fuzz FUZZ_SECONDS=3600
fuzz:
	FUZZ_SECONDS=$${FUZZ_SECONDS:-600} tests/t_fuzz.sh

# Installing. `make install PREFIX=/usr DESTDIR=/tmp/pkg` stages a package; PREFIX is
# the path the files will have at run time (the unit's ExecStart points there), DESTDIR
# only a staging root in front of it. Both binaries go into one directory: ck-basal
# starts the ck-basal-worker that sits beside it (src/supervisor/worker_proc.c).
PREFIX   ?= /usr/local
BINDIR   ?= $(PREFIX)/bin
MANDIR   ?= $(PREFIX)/share/man
UNITDIR  ?= $(PREFIX)/lib/systemd/user
COMPDIR  ?= $(PREFIX)/share/bash-completion/completions
MAN_PAGES := man/ck-basal.1 man/ck-basal-worker.8 man/ck.1
# Every file install writes, as installed; uninstall removes exactly these, in this
# order (the parent before the worker it needs).
INSTALLED := $(BINDIR)/ck $(BINDIR)/ck-basal $(BINDIR)/ck-basal-worker \
             $(MANDIR)/man1/ck.1 $(MANDIR)/man1/ck-basal.1 $(MANDIR)/man8/ck-basal-worker.8 \
             $(UNITDIR)/ck-basal.service $(COMPDIR)/ck-basal $(COMPDIR)/ck

# The user unit with ExecStart pointed at $(BINDIR). Rewritten only when that changes;
# a unit whose ExecStart line no longer has the form we rewrite fails the build rather
# than installing a unit that runs some other ck-basal.
build/gen/ck-basal.service: contrib/systemd/ck-basal.service FORCE
	@mkdir -p build/gen
	@grep -q '^ExecStart=%h/\.local/bin/ck-basal ' $< || \
	 { echo "$<: no 'ExecStart=%h/.local/bin/ck-basal ' line to point at $(BINDIR)" >&2; exit 1; }
	@sed 's|^ExecStart=%h/\.local/bin/ck-basal |ExecStart=$(BINDIR)/ck-basal |' $< > $@.tmp; \
	 cmp -s $@.tmp $@ && rm -f $@.tmp || mv $@.tmp $@

# The worker before the parent, so an installed parent never starts without its worker.
install: all build/gen/ck-basal.service
	install -d -m 0755 "$(DESTDIR)$(BINDIR)" "$(DESTDIR)$(MANDIR)/man1" "$(DESTDIR)$(MANDIR)/man8" \
	    "$(DESTDIR)$(UNITDIR)" "$(DESTDIR)$(COMPDIR)"
	install -m 0755 $(RELEASE_WORKER) "$(DESTDIR)$(BINDIR)/ck-basal-worker"
	install -m 0755 $(RELEASE_PARENT) "$(DESTDIR)$(BINDIR)/ck-basal"
	install -m 0755 $(RELEASE_CK) "$(DESTDIR)$(BINDIR)/ck"
	install -m 0644 man/ck.1 "$(DESTDIR)$(MANDIR)/man1/ck.1"
	install -m 0644 man/ck-basal.1 "$(DESTDIR)$(MANDIR)/man1/ck-basal.1"
	install -m 0644 man/ck-basal-worker.8 "$(DESTDIR)$(MANDIR)/man8/ck-basal-worker.8"
	install -m 0644 build/gen/ck-basal.service "$(DESTDIR)$(UNITDIR)/ck-basal.service"
	install -m 0644 contrib/bash-completion/ck-basal "$(DESTDIR)$(COMPDIR)/ck-basal"
	install -m 0644 contrib/bash-completion/ck "$(DESTDIR)$(COMPDIR)/ck"

# Directories stay: they may hold other packages' files.
uninstall:
	rm -f $(foreach f,$(INSTALLED),"$(DESTDIR)$(f)")

# The man pages render without a single groff warning (-ww: all of them).
man-check:
	@for page in $(MAN_PAGES); do \
	    out=$$(groff -man -ww -z "$$page" 2>&1) || { echo "$$page: groff failed" >&2; exit 1; }; \
	    if [ -n "$$out" ]; then printf '%s\n' "$$out" >&2; exit 1; fi; \
	 done

# A source tarball of the committed tree at HEAD (what `git ls-files` lists; never
# build/ or QuickJS), the same bytes from the same commit: git archive stamps every
# entry with the commit's time and fixed owners, gzip -n leaves out name and time.
# Uncommitted changes are not in it (a note says so).
DIST_VERSION = $(shell git show HEAD:VERSION)
DIST_NAME    = basal-$(DIST_VERSION)
dist:
	@test -n "$(DIST_VERSION)" || { echo "dist: no VERSION at HEAD" >&2; exit 1; }
	@git diff --quiet HEAD -- || echo "dist: note: uncommitted changes are not in the tarball (it is HEAD)" >&2
	@mkdir -p build/dist
	git archive --format=tar --prefix=$(DIST_NAME)/ -o build/dist/$(DIST_NAME).tar HEAD
	gzip -n -9 -f build/dist/$(DIST_NAME).tar
	cd build/dist && sha256sum $(DIST_NAME).tar.gz > $(DIST_NAME).tar.gz.sha256

clean:
	rm -rf build/bin build/release build/test build/asan build/lib build/bench build/dist build/aarch64 build/windows
