# arm64 Linux, cross-built: `make ARCH=aarch64` (or `make aarch64`) builds the release
# ck-basal-worker, ck-basal and ck into build/aarch64/bin with Debian's
# gcc-aarch64-linux-gnu against the arm64 libraries of Debian's multiarch
# (scripts/install-deps.sh --cross-aarch64). Running them needs an arm64 machine; this
# one cannot (qemu-user cannot load an arm64 seccomp filter: the filter would apply
# to qemu itself, an x86-64 process). What the suite checks here: both binaries
# link, and the seccomp filter that the arm64 build of seccomp_policy.c makes with
# the arm64 libseccomp the worker links is exported (under qemu-aarch64-static, which
# only runs the exporter, never loads the filter) into build/aarch64/filter.{pfc,bpf},
# which tests/t_syscall_table.c runs through its BPF interpreter against
# docs/syscall-admission.md as it does the x86-64 filter (docs/platforms.md).

A64        := build/aarch64
A64_CC     := aarch64-linux-gnu-gcc
A64_QEMU   := qemu-aarch64-static
# -fcf-protection is x86's; arm64's counterpart is branch protection (PAC and BTI).
A64_CFLAGS := $(filter-out -fcf-protection,$(BASEFLAGS)) -mbranch-protection=standard
A64_QLIB   := $(A64)/lib/libquickjs.a
A64_WORKER := $(A64)/bin/ck-basal-worker
A64_PARENT := $(A64)/bin/ck-basal
A64_CK     := $(A64)/bin/ck
A64_EXPORT := $(A64)/tools/export_filter
a64_objs    = $(patsubst %.c,$(A64)/obj/%.o,$(1))

$(A64)/obj/%.o: %.c | $(Q)/.fetched build/gen/version.h build/gen/prelude_js.h
	@mkdir -p $(dir $@)
	$(A64_CC) $(A64_CFLAGS) -c $< -o $@

-include $(shell find $(A64)/obj -name '*.d' 2>/dev/null)
# libpq's header is the native one (the same on arm64); libpq5:arm64 is loaded at run time.
$(A64)/obj/src/store/sql_postgres.o: A64_CFLAGS += $(PG_INCLUDE)

$(A64_QLIB): $(Q)/.fetched
	@mkdir -p $(A64)/lib/qobj
	for f in $(QSRC); do $(A64_CC) $(QFLAGS) -mbranch-protection=standard -c $(Q)/$$f -o $(A64)/lib/qobj/$${f%.c}.o || exit 1; done
	aarch64-linux-gnu-ar rcs $@ $(addprefix $(A64)/lib/qobj/,$(QSRC:.c=.o))

$(A64_WORKER): $(call a64_objs,$(WORKER_SRC) $(PROTO_SRC)) $(A64_QLIB)
	@mkdir -p $(dir $@)
	$(A64_CC) $(release_LDFLAGS) $^ -o $@ $(WORKER_LIBS)
$(A64_PARENT): $(call a64_objs,$(CLI_SRC) $(CORE_SRC) $(HOST_SRC) $(PROTO_SRC))
	@mkdir -p $(dir $@)
	$(A64_CC) $(release_LDFLAGS) $^ -o $@ $(PARENT_LIBS)
$(A64_CK): $(call a64_objs,$(CK_SRC) $(CK_MODULES))
	@mkdir -p $(dir $@)
	$(A64_CC) $(release_LDFLAGS) $^ -o $@ $(CK_LIBS)

# The exporter links the worker's own policy object and, like the worker, libseccomp
# statically, so the filter it prints is the one the arm64 worker builds.
$(A64_EXPORT): $(call a64_objs,tests/tools/export_filter.c src/worker/seccomp_policy.c)
	@mkdir -p $(dir $@)
	$(A64_CC) $(release_LDFLAGS) $^ -o $@ -static-pie -lseccomp
# 12345: the pid tests/t_syscall_table.c builds its filters for (kill/tgkill rules).
$(A64)/filter.bpf: $(A64_EXPORT)
	$(A64_QEMU) $< 12345 $(A64)/filter.pfc $@.tmp && mv -f $@.tmp $@

aarch64: $(A64_WORKER) $(A64_PARENT) $(A64_CK) $(A64)/filter.bpf
.PHONY: aarch64
