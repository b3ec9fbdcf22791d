# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# sluice: build the BPF objects (CO-RE against vmlinux/), their skeletons, and one binary.
# Out-of-tree in .output/; V=1 shows full commands.

OUTPUT ?= .output
ARCH ?= x86
CLANG ?= $(shell command -v clang-14 || command -v clang)
BPFTOOL ?= bpftool
CC ?= gcc
PREFIX ?= /usr/local
DESTDIR ?=

BPF_SRCS := $(wildcard bpf/*.bpf.c)
BPF_OBJS := $(patsubst bpf/%.bpf.c,$(OUTPUT)/bpf/%.bpf.o,$(BPF_SRCS))
BPF_LINKED := $(BPF_OBJS:.bpf.o=.linked.o)
SKELS := $(patsubst bpf/%.bpf.c,$(OUTPUT)/%.skel.h,$(BPF_SRCS))

APP_SRCS := $(wildcard userspace/*.c) policy/policy.c
APP_OBJS := $(patsubst %.c,$(OUTPUT)/obj/%.o,$(APP_SRCS))
# Everything but the command line, in one library that the binary and the unit tests link.
MAIN_OBJ := $(OUTPUT)/obj/userspace/main.o
LIB := $(OUTPUT)/libsluice.a
LIB_OBJS := $(filter-out $(MAIN_OBJ),$(APP_OBJS))

TOOLS := $(patsubst selftests/tools/%.c,$(OUTPUT)/selftests/%,$(wildcard selftests/tools/*.c))
# The same getaddrinfo client against musl, static, where musl-gcc is installed (make deps).
MUSL_GCC := $(shell command -v musl-gcc)
ifneq ($(MUSL_GCC),)
TOOLS += $(OUTPUT)/selftests/sl_resolve_musl
endif
UNIT_TESTS := $(patsubst selftests/unit/%.c,$(OUTPUT)/selftests/%,$(wildcard selftests/unit/*.c))
# BPF_PROG_RUN tests of the programs (selftests/test_progrun.sh): test-only objects that compile
# the programs' own sources, and the driver that links the library (the loader fills the maps).
PROGRUN_OBJS := $(patsubst selftests/progrun/%.bpf.c,$(OUTPUT)/progrun/%.bpf.o,\
	$(wildcard selftests/progrun/*.bpf.c))
PROGRUN_SKELS := $(PROGRUN_OBJS:.bpf.o=.skel.h)
PROGRUN := $(OUTPUT)/selftests/sl_progrun

CFLAGS ?= -O2 -g
# override: also when CFLAGS is given on the command line (make CFLAGS='-O1 -fsanitize=address')
override CFLAGS += -std=gnu11 -Wall -Wextra -Werror -MMD -MP -I$(OUTPUT) -D_FORTIFY_SOURCE=2
LDLIBS := -lbpf -lelf -lz -lyaml -lcrypto
BPF_CFLAGS := -g -O2 -target bpf -mcpu=v3 -D__TARGET_ARCH_$(ARCH) -Ivmlinux/$(ARCH) -Ibpf \
	-Wall -Werror

ifeq ($(V),1)
Q =
msg =
else
Q = @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

.DELETE_ON_ERROR:
.SECONDARY: $(BPF_OBJS) $(SKELS) $(PROGRUN_OBJS) $(PROGRUN_SKELS)
.PHONY: all deps test vmtest config-check demo bench bench-quick e2e probes install clean vmlinux fuzz

# make bench's empty programs, the per-packet figure's baseline, and its record source for the
# writer alone (selftests/bench.py)
BENCH_EMPTY := $(OUTPUT)/selftests/sl_empty.bpf.o
BENCH_FEED := $(OUTPUT)/selftests/sl_feed.bpf.o
# test_journal.sh's failing disk: an LD_PRELOAD shim whose fdatasync fails with EIO
FAILSYNC := $(OUTPUT)/selftests/sl_failsync.so

all: $(OUTPUT)/sluice $(TOOLS) $(UNIT_TESTS) $(PROGRUN) $(BENCH_EMPTY) $(BENCH_FEED) $(FAILSYNC)

deps:
	$(Q)bash .ci/deps.sh

$(OUTPUT) $(OUTPUT)/bpf $(OUTPUT)/selftests:
	$(Q)mkdir -p $@

$(OUTPUT)/bpf/%.bpf.o: bpf/%.bpf.c $(wildcard bpf/*.h) vmlinux/$(ARCH)/vmlinux.h | $(OUTPUT)/bpf
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

# The skeleton embeds the object in sluice, read at every load: linked first (bpftool gen object),
# which keeps BTF and line info and drops the DWARF (2.2 of its 2.8 MB).
$(BPF_LINKED): $(OUTPUT)/bpf/%.linked.o: $(OUTPUT)/bpf/%.bpf.o
	$(call msg,LINK,$@)
	$(Q)$(BPFTOOL) gen object $@ $<

$(SKELS): $(OUTPUT)/%.skel.h: $(OUTPUT)/bpf/%.linked.o | $(OUTPUT)
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name sl_$(subst -,_,$*) > $@

$(OUTPUT)/obj/%.o: %.c $(SKELS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -c $< -o $@

$(LIB): $(LIB_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(OUTPUT)/sluice: $(MAIN_OBJ) $(LIB)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $^ $(LDLIBS) -o $@

$(OUTPUT)/selftests/%: selftests/tools/%.c | $(OUTPUT)/selftests
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $< -o $@

# io_uring's connect and sendmsg (P11), through liburing (make deps).
$(OUTPUT)/selftests/sl_uring: selftests/tools/sl_uring.c | $(OUTPUT)/selftests
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $< -luring -o $@

# The escape-probe kit's workload (selftests/probes/): static, so that it runs in a container
# whose root holds nothing else (liburing's connect and sendmsg, P11).
$(OUTPUT)/selftests/sl_escape: selftests/tools/sl_escape.c | $(OUTPUT)/selftests
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -static $< -luring -o $@

$(OUTPUT)/selftests/sl_bench: selftests/tools/sl_bench.c | $(OUTPUT)/selftests
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $< -lpthread -o $@

# The verifier's statistics per program (bench.py --verifier-only): libbpf, as sluice loads them.
$(OUTPUT)/selftests/sl_verifier: selftests/tools/sl_verifier.c | $(OUTPUT)/selftests
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $< -lbpf -lelf -lz -o $@

$(BENCH_EMPTY): selftests/bench/sl_empty.bpf.c vmlinux/$(ARCH)/vmlinux.h | $(OUTPUT)/selftests
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BENCH_FEED): selftests/bench/sl_feed.bpf.c bpf/sluice.h vmlinux/$(ARCH)/vmlinux.h | $(OUTPUT)/selftests
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(FAILSYNC): selftests/preload/sl_failsync.c | $(OUTPUT)/selftests
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -shared -fPIC $< -ldl -o $@

# the writer's record source (bench.py): libbpf, as sluice loads its programs
$(OUTPUT)/selftests/sl_feed: selftests/tools/sl_feed.c bpf/sluice.h | $(OUTPUT)/selftests
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $< -lbpf -lelf -lz -o $@

$(OUTPUT)/selftests/sl_resolve_musl: selftests/tools/sl_resolve.c | $(OUTPUT)/selftests
	$(call msg,MUSL-CC,$@)
	$(Q)$(MUSL_GCC) -static -O2 -Wall -Wextra -Werror $< -o $@

# Each unit test links the library: the linker takes the modules it uses, as the binary does.
$(OUTPUT)/selftests/test_%: selftests/unit/test_%.c $(LIB) | $(OUTPUT)/selftests
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -I. -DSLUICE_SRC_DIR='"$(CURDIR)"' $< $(LIB) $(LDLIBS) -o $@

$(OUTPUT)/progrun/%.bpf.o: selftests/progrun/%.bpf.c selftests/progrun/progrun.h \
		$(wildcard bpf/*.h bpf/*.bpf.c) vmlinux/$(ARCH)/vmlinux.h
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(OUTPUT)/progrun/%.skel.h: $(OUTPUT)/progrun/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name sl_$* > $@

$(PROGRUN): selftests/progrun/progrun.c selftests/progrun/progrun.h $(PROGRUN_SKELS) $(LIB) \
		| $(OUTPUT)/selftests
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -I. -I$(OUTPUT)/progrun $< $(LIB) $(LDLIBS) -o $@

# Unit tests (no root) first, then the root selftests, each building its own topology; --timer
# prints each file's duration, which keeps the time budget in sight in CI logs.
test: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)prove --timer --exec '' $(UNIT_TESTS) $(sort $(wildcard selftests/test_*.sh))

# Every root selftest in qemu, on this machine's root and build (software emulation: an hour or
# more per kernel): Debian's 6.1 and 6.12 kernels, or KERNEL=path/to/bzImage (MODULES=dir as
# modules_install left it, CONFIG=file, else the one built in; checked against selftests/config).
# VM_MEM (qemu -m), VM_APPEND (added to the kernel's command line), VM_TIMEOUT (s per VM,
# default 600 per test file it runs and 600 for the boot, 9 h for the whole suite: a guest
# still running then is killed and fails), VM_JOBS (kernels booted at once, default 1: each VM
# takes two CPUs' worth of emulation and VM_MEM), VM_SHARDS (VMs that share out each kernel's
# test files and run at once, default 1: each keeps about one core busy). VMTEST_ARGS: more of
# selftests/vm/vmtest.sh's arguments (-k 6.1, test files).
VM_TIMEOUT ?=
VMTEST_ARGS ?=
vmtest: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)bash selftests/vm/vmtest.sh $(if $(VM_TIMEOUT),-t '$(VM_TIMEOUT)') \
		$(if $(VM_JOBS),-j '$(VM_JOBS)') $(if $(VM_SHARDS),-s '$(VM_SHARDS)') \
		$(if $(VM_MEM),-m '$(VM_MEM)') $(if $(VM_APPEND),-a '$(VM_APPEND)') \
		$(if $(KERNEL),-K '$(KERNEL)') $(if $(MODULES),-M '$(MODULES)') \
		$(if $(CONFIG),-C '$(CONFIG)') $(VMTEST_ARGS)

# Which options of selftests/config (what sluice needs of a kernel) CONFIG=file lacks.
config-check:
	$(Q)bash selftests/vm/config-check.sh '$(CONFIG)'

demo: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)bash selftests/demo.sh

# connect()/close() side by side with no program, nftables and tinyproxy (hot and spread, 10,
# 10k and 100k CIDRs, 15 interleaved rounds), the programs' cost per packet of an established
# flow over empty programs (BENCH_ARGS=--packets-only: that alone), start-up, attach, memory per
# run, the signed pipeline and replace-policy at 100k (selftests/bench.py; root; ten minutes or
# so). Writes
# .output/bench/results.json and results.md. BENCH_ARGS: more of bench.py's options.
bench: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)bash selftests/bench.sh $(BENCH_ARGS)

# CI's: a short table for information; fails only on instruction budgets, memory per run and
# loss at a paced rate (selftests/bench-budgets.txt), never on a time (under 2 minutes).
bench-quick:
	$(Q)$(MAKE) --no-print-directory all
	$(Q)bash selftests/bench.sh --quick $(BENCH_ARGS)

# A real package task (npm, pnpm, pip, git) against local registry servers, five ways: open
# network, no network, a proxy, sluice, report mode (selftests/e2e/README.md; root, a few
# minutes). Prints the table; writes it to .output/e2e/results.md and results.json.
e2e: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)bash selftests/e2e/e2e.sh

# Every escape probe against sluice on this kernel (root; the better part of an hour: the selftest
# files of the probes the kit does not make run too; PROBES_FILES='test_x.sh …' only those;
# PROBES_KIT_ONLY=1 the kit alone, about a minute), and with VM=1 in the VMs of make vmtest
# (KERNEL=, MODULES=, CONFIG=, VM_JOBS, VM_MEM, VM_APPEND, VM_TIMEOUT as there, but 4 h here; VMTEST_ARGS: -k
# 6.1…): one TAP line per probe and kernel, and the table probe × kernel, written to
# .output/probes.md. SANDBOX='CMD' runs the kit against a sandbox sluice did not set up instead
# ({netns}, {kit}: selftests/probes/run-external.sh; SANDBOX_NAME its column), the table in
# .output/probes-external.md; SANDBOX_PID=PID against the one already running that PID is in (its
# network namespace with no link but loopback, its user namespace this machine's: run-external.sh
# --pid).
probes: deps
	$(Q)$(MAKE) --no-print-directory all
ifneq ($(SANDBOX)$(SANDBOX_PID),)
	$(Q)bash selftests/probes/run-external.sh \
		$(if $(SANDBOX),--enter '$(SANDBOX)',--pid '$(SANDBOX_PID)') \
		$(if $(SANDBOX_NAME),--name '$(SANDBOX_NAME)')
else
	$(Q)bash selftests/probes/make-probes.sh $(if $(VM),--vm -t '$(or $(VM_TIMEOUT),14400)' \
		$(if $(VM_JOBS),-j '$(VM_JOBS)') $(if $(VM_MEM),-m '$(VM_MEM)') $(if $(VM_APPEND),-a '$(VM_APPEND)') \
		$(if $(KERNEL),-K '$(KERNEL)') $(if $(MODULES),-M '$(MODULES)') \
		$(if $(CONFIG),-C '$(CONFIG)') $(VMTEST_ARGS))
endif

# libFuzzer on the DNS parser and builder, for FUZZ_SECONDS, from a copy of the unit-test corpus
# (new inputs land in .output/fuzz-corpus; crashes in .output/). The corpus itself runs in make test.
FUZZ_SECONDS ?= 60
fuzz: | $(OUTPUT)
	$(call msg,FUZZ,$(OUTPUT)/fuzz_dns)
	$(Q)$(CLANG) -g -O1 -fsanitize=fuzzer,address,undefined -I. selftests/fuzz/fuzz_dns.c \
		userspace/dns.c -o $(OUTPUT)/fuzz_dns
	$(Q)mkdir -p $(OUTPUT)/fuzz-corpus && cp selftests/unit/dns-corpus/* $(OUTPUT)/fuzz-corpus/
	$(Q)$(OUTPUT)/fuzz_dns -max_total_time=$(FUZZ_SECONDS) -max_len=1024 \
		-artifact_prefix=$(OUTPUT)/ $(OUTPUT)/fuzz-corpus

install: $(OUTPUT)/sluice
	install -D -m 0755 $(OUTPUT)/sluice $(DESTDIR)$(PREFIX)/sbin/sluice
	install -D -m 0644 policy/examples/demo.yaml $(DESTDIR)$(PREFIX)/share/sluice/examples/demo.yaml
	install -D -m 0644 userspace/sluice.8 $(DESTDIR)$(PREFIX)/share/man/man8/sluice.8
	install -D -m 0644 policy/sluice-policy.5 $(DESTDIR)$(PREFIX)/share/man/man5/sluice-policy.5
	install -D -m 0644 userspace/sluice-log.5 $(DESTDIR)$(PREFIX)/share/man/man5/sluice-log.5

# Regenerate the committed CO-RE header from the running kernel's BTF.
vmlinux:
	$(call msg,GEN,vmlinux/$(ARCH)/vmlinux.h)
	$(Q)$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > vmlinux/$(ARCH)/vmlinux.h.tmp
	$(Q)mv vmlinux/$(ARCH)/vmlinux.h.tmp vmlinux/$(ARCH)/vmlinux.h

clean:
	$(call msg,CLEAN,$(OUTPUT))
	$(Q)rm -rf $(OUTPUT)

-include $(APP_OBJS:.o=.d)
