# rover: one generated-file chain .bpf.c -> .bpf.o -> .skel.h -> .o, out of tree under build/.
# `make V=1` prints the commands.
.DELETE_ON_ERROR:
.SECONDARY:
.DEFAULT_GOAL := all

OUT      ?= build
CC       ?= gcc
CLANG    ?= clang
BPFTOOL  ?= bpftool
ARCH     := $(shell uname -m | sed 's/x86_64/x86/;s/aarch64/arm64/')
DEBUG    ?= 0

ifeq ($(V),1)
Q =
msg =
else
Q = @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

CFLAGS   ?= -O2 -g
CFLAGS   += -std=gnu11 -Wall -Wextra -Werror -Wno-missing-field-initializers \
            -fstack-protector-strong -D_FORTIFY_SOURCE=2 -fPIE \
            -I. -I$(OUT) -DROVER_DEBUG=$(DEBUG)
LDFLAGS  += -pie -Wl,-z,relro,-z,now

BPF_SRCS    := $(wildcard bpf/*.bpf.c)
BPF_SKELS   := $(patsubst bpf/%.bpf.c,$(OUT)/%.skel.h,$(BPF_SRCS))
PROTO_PPROF := $(OUT)/proto/pprof/profile.pb-c.c
# SkyWalking v3 protocol (proto/README.md), generated with -Iproto so upstream's imports work.
# The supervisor and the shipper link it; the worker and the launcher never do.
SW_PROTOS     := common/Common common/Command ebpf/profiling/Process ebpf/profiling/Profile \
                 ebpf/profiling/Continuous language-agent/Meter language-agent/Tracing \
                 logging/Logging ebpf/accesslog
SW_PROTO_HDRS := $(patsubst %,$(OUT)/proto/%.pb-c.h,$(SW_PROTOS))
SW_PROTO_OBJS := $(patsubst %,$(OUT)/proto/%.pb-c.o,$(SW_PROTOS))

COMMON_SRCS     := $(wildcard common/*.c)
# common/config: the config file and name templates (launcher, supervisor, shipper).
# common/grpc: the OAP client (supervisor, shipper): never in the launcher or the worker.
# oap.c, the only code that calls gRPC, is the module $(OUT)/librover-oap.so, which the two
# roles load only with a backend configured; they link oap_load.c (its forwarders and
# oap__load) and backoff.c. Tests, fuzz targets and benches link the client itself (GRPC_OBJS).
CONFIG_SRCS     := $(wildcard common/config/*.c)
GRPC_SRCS       := common/grpc/oap.c common/grpc/backoff.c
# A role's sources are every .c under its folder, its rooms included (shipper/stacks/, ...).
srcs_of = $(sort $(shell find $(1) -name '*.c'))
LAUNCHER_SRCS   := $(filter-out launcher/main.c,$(wildcard launcher/*.c))
# supervisor/discovery/curl_load.c: libcurl loaded at run time, in the binary only (tests link
# -lcurl).
SUPERVISOR_SRCS := $(filter-out supervisor/main.c supervisor/discovery/curl_load.c, \
                   $(call srcs_of,supervisor))
WORKER_SRCS     := $(filter-out worker/main.c,$(wildcard worker/*.c))
# shipper/capstone_load.c: libcapstone loaded at run time, in the binary only (tests link it).
SHIPPER_SRCS    := $(filter-out shipper/main.c shipper/capstone_load.c,$(call srcs_of,shipper))
# policy/: the tables the roles link; compile.c and filtergen.c turn them into seccomp programs
# at build time ($(OUT)/policy/filters.c), so that no role links libseccomp.
POLICY_TABLES   := $(filter-out policy/compile.c policy/filtergen.c,$(wildcard policy/*.c))

obj = $(patsubst %.c,$(OUT)/%.o,$(1))

COMMON_OBJS     := $(call obj,$(COMMON_SRCS))
CONFIG_OBJS     := $(call obj,$(CONFIG_SRCS))
GRPC_OBJS       := $(call obj,$(GRPC_SRCS)) $(OUT)/policy/grpc.o
OAP_SHIM_OBJS   := $(OUT)/common/grpc/oap_load.o $(OUT)/common/grpc/backoff.o $(OUT)/policy/grpc.o
OAP_MODULE      := $(OUT)/librover-oap.so
FILTERS_OBJ     := $(OUT)/policy/filters.o
LAUNCHER_OBJS   := $(call obj,$(LAUNCHER_SRCS)) $(OUT)/policy/launcher.o $(FILTERS_OBJ)
SUPERVISOR_OBJS := $(call obj,$(SUPERVISOR_SRCS)) $(OUT)/policy/supervisor.o $(FILTERS_OBJ) \
                   $(CONFIG_OBJS) $(SW_PROTO_OBJS)
WORKER_OBJS     := $(call obj,$(WORKER_SRCS)) $(OUT)/policy/worker.o $(FILTERS_OBJ)
SHIPPER_OBJS    := $(call obj,$(SHIPPER_SRCS)) $(OUT)/policy/shipper.o $(FILTERS_OBJ) \
                   $(OUT)/proto/pprof/profile.pb-c.o $(CONFIG_OBJS) $(SW_PROTO_OBJS)

# Each role links only what it needs: the worker never links protobuf, gRPC or YAML; no binary
# links gRPC, libcurl or libcapstone (the OAP module, supervisor/discovery/curl_load.c and
# shipper/capstone_load.c load them when configured or needed).
LIBS_COMMON     := -lcap-ng
LIBS_CONFIG     := -lyaml -lpcre2-8
LIBS_GRPC       := -lgrpc -lgpr -lprotobuf-c -lpthread
LIBS_WORKER     := -lbpf -lelf -lz $(LIBS_COMMON)
LIBS_SHIPPER    := -lelf -lprotobuf-c -lz -liberty -llzma -ldw $(LIBS_CONFIG) \
                   $(LIBS_COMMON) -lcapstone

# The four binaries take their libraries from the static archives, but for glibc and
# protobuf-c: each role is exec'd anew for every task, and ld.so mapping and relocating a
# dozen shared objects was a third of a role's start (docs/performance.md, "One-shot
# start-up"). protobuf-c stays shared because the OAP module, loaded beside it, links it too:
# one copy of its globals. Tests link the same objects against the shared libraries.
static = -Wl,-Bstatic $(1) -Wl,-Bdynamic
LIBS_LAUNCHER_BIN   := $(call static,$(LIBS_CONFIG) $(LIBS_COMMON))
LIBS_SUPERVISOR_BIN := $(call static,$(LIBS_CONFIG) -ljson-c $(LIBS_COMMON)) -lprotobuf-c
LIBS_WORKER_BIN     := $(call static,-lbpf -lelf -lz -lzstd $(LIBS_COMMON))
LIBS_SHIPPER_BIN    := $(call static,-ldw -lelf -liberty $(LIBS_CONFIG) $(LIBS_COMMON) \
                       -lz -llzma -lbz2 -lzstd) -lprotobuf-c

BINS := $(OUT)/rover $(OUT)/rover-supervisor $(OUT)/rover-worker $(OUT)/rover-shipper

TEST_PROGS := $(patsubst tests/programs/%.c,$(OUT)/tests/programs/%,$(wildcard tests/programs/*.c)) \
              $(patsubst tests/programs/%.cc,$(OUT)/tests/programs/%,$(wildcard tests/programs/*.cc)) \
              $(OUT)/tests/programs/gotls $(OUT)/tests/programs/gotls_stripped \
              $(OUT)/tests/programs/gotls_pie $(OUT)/tests/programs/kmock \
              $(OUT)/tests/programs/java/jni_host
UNIT_SRCS  := $(wildcard tests/unit/test_*.c)
INTEG_SRCS := $(wildcard tests/integration/test_*.c)
SEC_SRCS   := $(wildcard tests/security/test_*.c)

.PHONY: all deps test unit integration security demo bench soak clean format format-check fuzz install
all: $(BINS) $(OAP_MODULE) $(OUT)/rover.1

# The manual page, from the help the commands print (one source: the usage texts in
# launcher/main.c and launcher/watch.h).
$(OUT)/rover.1: $(OUT)/rover scripts/gen-man.sh
	$(call msg,GEN,$@)
	$(Q)scripts/gen-man.sh $(OUT)/rover > $@.tmp && mv $@.tmp $@

deps:
	$(Q)scripts/install-deps.sh

$(OUT)/vmlinux.h:
	$(call msg,BTF,$@)
	$(Q)mkdir -p $(@D) && $(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@

# -Wno-unused-parameter: BPF_PROG and BPF_KPROBE name every argument of a hook up to the last
# one used, and take ctx whether the body reads it or not.
$(OUT)/%.bpf.o: bpf/%.bpf.c $(OUT)/vmlinux.h $(wildcard common/*.h bpf/*.h bpf/*/*.h)
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(@D) && $(CLANG) -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) \
		-Wall -Wextra -Wno-unused-parameter -Werror -I$(OUT) -I. -c $< -o $@

$(OUT)/%.skel.h: $(OUT)/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@

$(OUT)/proto/pprof/profile.pb-c.c $(OUT)/proto/pprof/profile.pb-c.h: proto/pprof/profile.proto
	$(call msg,PROTOC,$<)
	$(Q)mkdir -p $(OUT) && protoc-c --c_out=$(OUT) $<

$(OUT)/proto/%.pb-c.c $(OUT)/proto/%.pb-c.h: proto/%.proto
	$(call msg,PROTOC,$<)
	$(Q)mkdir -p $(OUT)/proto && protoc-c --c_out=$(OUT)/proto -Iproto $<

$(OUT)/proto/%.pb-c.o: $(OUT)/proto/%.pb-c.c
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -I$(OUT)/proto -Wno-unused-parameter -c $< -o $@

# Generated SkyWalking headers include each other as "common/Common.pb-c.h": every object
# sees build/proto on its include path, after the tree's own common/.
CFLAGS += -idirafter $(OUT)/proto

# The shipped config, compiled into the launcher: `rover run` without --config runs on it.
$(OUT)/configs/rover_configs.h: configs/rover_configs.yaml
	$(call msg,GEN,$@)
	$(Q)mkdir -p $(@D) && { printf 'static const char rover_default_config[] = {'; \
		od -An -v -tx1 $< | sed 's/ \([0-9a-f][0-9a-f]\)/0x\1,/g'; printf '0 };\n'; } > $@

# The version the HTML reports name: the commit built (-dirty: with changes not committed).
# The header is rewritten only when that changes, so that nothing else is rebuilt for it.
ROVER_VERSION := $(shell git describe --always --dirty 2>/dev/null || echo unknown)
$(OUT)/version.h: FORCE
	$(Q)mkdir -p $(@D) && printf '#define ROVER_VERSION "%s"\n' '$(ROVER_VERSION)' > $@.tmp && \
		{ cmp -s $@.tmp $@ && rm -f $@.tmp || mv $@.tmp $@; }
.PHONY: FORCE
FORCE:

# Generated headers come before any object that may include them.
GENERATED := $(BPF_SKELS) $(OUT)/proto/pprof/profile.pb-c.h $(SW_PROTO_HDRS) \
             $(OUT)/configs/rover_configs.h $(OUT)/version.h

$(OUT)/%.o: %.c | $(GENERATED)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D) && $(CC) $(CFLAGS) -MMD -MP -c $< -o $@

# Every role's seccomp program, compiled from policy/*.c here rather than at each start.
$(OUT)/policy/filtergen: $(OUT)/policy/filtergen.o $(OUT)/policy/compile.o $(call obj,$(POLICY_TABLES))
	$(call msg,LINK,$@)
	$(Q)$(CC) $(LDFLAGS) $^ -o $@ -lseccomp
$(OUT)/policy/filters.c: $(OUT)/policy/filtergen
	$(call msg,GEN,$@)
	$(Q)$< > $@.tmp && mv $@.tmp $@
$(FILTERS_OBJ): $(OUT)/policy/filters.c
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -c $< -o $@

$(OUT)/rover: $(OUT)/launcher/main.o $(LAUNCHER_OBJS) $(CONFIG_OBJS) $(COMMON_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(LDFLAGS) $^ -o $@ $(LIBS_LAUNCHER_BIN)

$(OUT)/rover-supervisor: $(OUT)/supervisor/main.o $(SUPERVISOR_OBJS) $(OAP_SHIM_OBJS) \
		$(OUT)/supervisor/discovery/curl_load.o $(COMMON_OBJS) | $(OAP_MODULE)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(LDFLAGS) $^ -o $@ $(LIBS_SUPERVISOR_BIN)

$(OUT)/rover-worker: $(OUT)/worker/main.o $(WORKER_OBJS) $(COMMON_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(LDFLAGS) $^ -o $@ $(LIBS_WORKER_BIN)

$(OUT)/rover-shipper: $(OUT)/shipper/main.o $(SHIPPER_OBJS) $(OAP_SHIM_OBJS) \
		$(OUT)/shipper/capstone_load.o $(COMMON_OBJS) | $(OAP_MODULE)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(LDFLAGS) $^ -o $@ $(LIBS_SHIPPER_BIN)

# The OAP client as a module (common/grpc/oap_load.c): position-independent, its entry points
# (OAP_EXPORT) the only symbols it exports, every relocation done at load (-z now).
$(OUT)/pic/%.o: %.c | $(GENERATED)
	$(call msg,CC-PIC,$@)
	$(Q)mkdir -p $(@D) && $(CC) $(CFLAGS) -fPIC -fvisibility=hidden -MMD -MP -c $< -o $@
$(OAP_MODULE): $(OUT)/pic/common/grpc/oap.o
	$(call msg,LINK,$@)
	$(Q)$(CC) -shared -Wl,-z,relro,-z,now,-z,defs -Wl,-soname,$(notdir $@) $^ -o $@ $(LIBS_GRPC)

# Test targets: programs the tests profile (built with frame pointers, as the ON_CPU
# unwinder of this issue needs), unit tests, integration tests against the real kernel.
# -O0: GCC omits the frame pointer of leaf functions at any -O level, even with
# -fno-omit-frame-pointer, and a frame-pointer unwinder then skips the leaf's caller.
TEST_CFLAGS := -O0 -g -fno-omit-frame-pointer
$(OUT)/tests/programs/%: tests/programs/%.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D) && $(CC) $(TEST_CFLAGS) $< -o $@ -lpthread -lm
# nofp_*: built entirely without frame pointers, as distributions build most code.
$(OUT)/tests/programs/nofp_%: tests/programs/nofp_%.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D) && $(CC) -O2 -g -fomit-frame-pointer $< -o $@ -lpthread
# A PIE executable calling into a shared library the build makes, found next to it by rpath.
$(OUT)/tests/programs/libburn.so: tests/programs/lib/libburn.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D) && $(CC) $(TEST_CFLAGS) -shared -fPIC $< -o $@
$(OUT)/tests/programs/pie_lib_main: tests/programs/pie_lib_main.c $(OUT)/tests/programs/libburn.so
	$(call msg,CC,$@)
	$(Q)$(CC) $(TEST_CFLAGS) -fPIE -pie $< -o $@ -L$(OUT)/tests/programs -lburn -Wl,-rpath,'$$ORIGIN'
# A C program that creates a JVM by JNI (the libjvm.so it is given, dlopen'ed): JDK 17's jni.h.
JNI_INCLUDE := /usr/lib/jvm/java-17-openjdk-amd64/include
$(OUT)/tests/programs/java/jni_host: tests/programs/java/jni_host.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D) && $(CC) $(TEST_CFLAGS) -I$(JNI_INCLUDE) -I$(JNI_INCLUDE)/linux $< -o $@ -ldl
$(OUT)/tests/programs/%: tests/programs/%.cc
	$(call msg,CXX,$@)
	$(Q)mkdir -p $(@D) && g++ $(TEST_CFLAGS) $< -o $@ -lpthread
# The Go crypto/tls peer of the NETWORK TLS tests, stdlib only, built offline (there is no
# network): once as go builds it, once stripped (-s -w: no symbol table, no DWARF; the
# pclntab still names every function), once as a PIE.
GOTLS_SRCS  := $(wildcard tests/programs/gotls/*.go) tests/programs/gotls/go.mod
GOTLS_BUILD := cd tests/programs/gotls && GOFLAGS=-mod=mod GOPROXY=off \
               GOCACHE=$(abspath $(OUT))/gocache go build
$(OUT)/tests/programs/gotls: $(GOTLS_SRCS)
	$(call msg,GO,$@)
	$(Q)mkdir -p $(@D) && $(GOTLS_BUILD) -o $(abspath $@) .
$(OUT)/tests/programs/gotls_stripped: $(GOTLS_SRCS)
	$(call msg,GO,$@)
	$(Q)mkdir -p $(@D) && $(GOTLS_BUILD) -ldflags='-s -w' -o $(abspath $@) .
# PIE: the table is then .data.rel.ro.gopclntab.
$(OUT)/tests/programs/gotls_pie: $(GOTLS_SRCS)
	$(call msg,GO,$@)
	$(Q)mkdir -p $(@D) && $(GOTLS_BUILD) -buildmode=pie -o $(abspath $@) .

# sarama's MockBroker as a v0 Kafka broker (tests/tools/kmock), from Debian's
# golang-github-shopify-sarama-dev in GOPATH mode (offline); its zstd cgo calls a deprecated
# function.
$(OUT)/tests/programs/kmock: tests/tools/kmock/main.go
	$(call msg,GO,$@)
	$(Q)mkdir -p $(@D) && cd tests/tools/kmock && GO111MODULE=off GOPATH=/usr/share/gocode \
		GOCACHE=$(abspath $(OUT))/gocache CGO_CFLAGS="-O2 -g -Wno-deprecated-declarations" \
		go build -o $(abspath $@) .

# The unit runner links every role's code but main.c, and of the worker's only its stack-hint
# table, ring-record checks, ring reader and the checks of handed files (worker/stackhint.c,
# snaprec.c, ringread.c, elffile.c, pyattach.c, pyoffsets.c, kbtf.c, jvmstructs.c,
# v8structs.c): its BPF is tested live.
$(OUT)/tests/unit/runner: $(call obj,$(UNIT_SRCS)) $(call obj,$(SUPERVISOR_SRCS)) $(OUT)/policy/supervisor.o \
		$(OUT)/policy/launcher.o $(OUT)/policy/worker.o $(OUT)/policy/compile.o \
		$(OUT)/worker/stackhint.o $(OUT)/worker/snaprec.o $(OUT)/worker/ringread.o \
		$(OUT)/worker/elffile.o $(OUT)/worker/pyattach.o $(OUT)/worker/pyoffsets.o \
		$(OUT)/worker/kbtf.o $(OUT)/worker/jvmstructs.o $(OUT)/worker/v8structs.o $(sort $(SHIPPER_OBJS) $(CONFIG_OBJS) $(GRPC_OBJS) $(SW_PROTO_OBJS)) $(COMMON_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(LDFLAGS) $^ -o $@ -lcriterion $(LIBS_SHIPPER) $(LIBS_GRPC) -ljson-c -lcurl -lseccomp \
		-lbpf -lcrypto -lnghttp2

# The forwarders of the OAP module and of libcurl, unloaded (the unit runner links the real
# libraries under the same names).
$(OUT)/tests/unit/load_runner: $(OUT)/tests/unit/shim/test_load.o $(OUT)/common/grpc/oap_load.o \
		$(OUT)/supervisor/discovery/curl_load.o $(OUT)/shipper/capstone_load.o \
		$(OUT)/common/dynload.o $(OUT)/proto/common/Command.pb-c.o \
		$(OUT)/proto/common/Common.pb-c.o
	$(call msg,LINK,$@)
	$(Q)$(CC) $(LDFLAGS) $^ -o $@ -lcriterion -lprotobuf-c

$(OUT)/tests/integration/runner: $(call obj,$(INTEG_SRCS) tests/integration/harness.c \
		tests/integration/oap_harness.c tests/integration/netreport.c tests/integration/kube_harness.c) $(COMMON_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(LDFLAGS) $^ -o $@ -lcriterion -ljson-c $(LIBS_COMMON) -lm

# tests/security: each finding of the privilege review, written as the attack (policy/README.md).
# tls_attach_worker: the worker's TLS attach (worker/netcap.c) under the worker's own drop and
# filters, for test_tls_attach.c to send hostile messages to.
$(OUT)/tests/security/runner: $(call obj,$(SEC_SRCS) tests/integration/harness.c) $(COMMON_OBJS) \
		$(call obj,$(POLICY_TABLES)) $(OUT)/policy/compile.o $(FILTERS_OBJ) \
		$(OUT)/launcher/spawner.o $(CONFIG_OBJS) \
		| $(OUT)/tests/security/tls_attach_worker
	$(call msg,LINK,$@)
	$(Q)$(CC) $(LDFLAGS) $^ -o $@ -lcriterion -ljson-c $(LIBS_CONFIG) $(LIBS_COMMON) -lseccomp
$(OUT)/tests/security/tls_attach_worker: $(OUT)/tests/security/tls_attach_worker.o $(WORKER_OBJS) \
		$(COMMON_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(LDFLAGS) $^ -o $@ $(LIBS_WORKER)

unit: deps-check $(OUT)/tests/unit/runner $(OUT)/tests/unit/load_runner $(TEST_PROGS) \
		$(OUT)/oncpu.bpf.o $(OUT)/offcpu.bpf.o
	scripts/run-suite.sh $(OUT)/unit.tap $(OUT)/tests/unit/runner --jobs 2
	scripts/run-suite.sh $(OUT)/load.tap $(OUT)/tests/unit/load_runner --jobs 2

integration: deps-check all $(OUT)/tests/integration/runner $(TEST_PROGS)
	ROVER_BUILD=$(abspath $(OUT)) ROVER_SRC=$(CURDIR) \
		scripts/run-suite.sh $(OUT)/integration.tap $(OUT)/tests/integration/runner --jobs 1 --verbose=0

security: deps-check all $(OUT)/tests/security/runner $(TEST_PROGS)
	ROVER_BUILD=$(abspath $(OUT)) ROVER_SRC=$(CURDIR) \
		scripts/run-suite.sh $(OUT)/security.tap $(OUT)/tests/security/runner --jobs 1 --verbose=0

test: deps
	$(MAKE) unit
	$(MAKE) fuzz-replay
	$(MAKE) integration
	$(MAKE) security

# Installs the binaries, the OAP module beside them (the roles look for it next to their own
# executable), the manual page, the rover user (deploy/sysusers.d) and the systemd unit.
PREFIX ?= /usr/local
MANDIR ?= $(PREFIX)/share/man
install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)/usr/lib/sysusers.d \
		$(DESTDIR)/etc/systemd/system $(DESTDIR)/etc/rover $(DESTDIR)$(MANDIR)/man1
	install -m 0755 $(BINS) $(DESTDIR)$(PREFIX)/bin/
	install -m 0644 $(OUT)/rover.1 $(DESTDIR)$(MANDIR)/man1/rover.1
	install -m 0644 $(OAP_MODULE) $(DESTDIR)$(PREFIX)/bin/
	install -m 0644 deploy/sysusers.d/rover.conf $(DESTDIR)/usr/lib/sysusers.d/rover.conf
	install -m 0644 deploy/systemd/rover.service $(DESTDIR)/etc/systemd/system/rover.service
	[ -e $(DESTDIR)/etc/rover/rover_configs.yaml ] || \
		install -m 0644 configs/rover_configs.yaml $(DESTDIR)/etc/rover/rover_configs.yaml
	[ -n "$(DESTDIR)" ] || { command -v systemd-sysusers >/dev/null && \
		systemd-sysusers /usr/lib/sysusers.d/rover.conf || scripts/add-rover-user.sh; }

.PHONY: deps-check
deps-check:
	@command -v $(BPFTOOL) >/dev/null || { echo "missing bpftool: run 'make deps'"; exit 1; }

demo: deps
	$(MAKE) all $(OUT)/tests/programs/demo_burn
	scripts/demo.sh

bench: deps
	$(MAKE) all $(OUT)/tests/programs/bench_two_threads $(OUT)/tests/bench/bench_upload \
		$(OUT)/tests/bench/bench_symbolize $(OUT)/tests/programs/llvm_map \
		$(OUT)/tests/programs/sock_writes $(OUT)/tests/bench/hook_floor \
		$(OUT)/tests/bench/tls_calls $(OUT)/tests/programs/idle_burn \
		$(OUT)/tests/programs/idle_many $(OUT)/tests/bench/bench_pyframes \
		$(OUT)/tests/bench/bench_http2 $(OUT)/tests/integration/runner
	scripts/bench.sh
	scripts/bench_unwind.sh
	scripts/bench_network.sh
	scripts/bench_network_tls.sh
	scripts/bench_network_protocols.sh
	scripts/bench_continuous.sh
	scripts/bench_python.sh
	scripts/bench_node.sh
	scripts/bench_java.sh
	scripts/bench_discovery.sh
	scripts/bench_accesslog.sh

# The endurance scenarios at full length (scripts/soak.sh: about 1 h 40 min; SOAK_SCALE=0.1
# for a tenth), then 5 s of fuzzing per target. Not part of `make test`, which runs the same
# scenarios short (tests/integration/test_endurance.c).
soak: deps
	$(MAKE) all $(OUT)/tests/integration/runner $(TEST_PROGS)
	scripts/soak.sh
	$(MAKE) fuzz-short

# Upload cost per 1000 distinct stacks; scripts/bench.sh runs it against the fake OAP.
$(OUT)/tests/bench/bench_upload: $(OUT)/tests/bench/bench_upload.o $(OUT)/shipper/output/upload.o \
		$(OUT)/shipper/output/spool.o $(GRPC_OBJS) $(SW_PROTO_OBJS) $(COMMON_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(LDFLAGS) $^ -o $@ $(LIBS_GRPC) -lz $(LIBS_COMMON)
# Symbolization rate and memory, 50 processes mapping libLLVM; scripts/bench.sh runs it.
SYMBOLIZE_OBJS := $(addprefix $(OUT)/shipper/,stacks/symbolize.o stacks/elfsym.o \
		  stacks/demangle.o stacks/gopclntab.o stacks/kallsyms.o lines.o opener.o)
$(OUT)/tests/bench/bench_symbolize: $(OUT)/tests/bench/bench_symbolize.o $(SYMBOLIZE_OBJS) \
		$(COMMON_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(LDFLAGS) $^ -o $@ -lelf -lz -liberty -llzma $(LIBS_COMMON)

# Naming Python frames, warm; scripts/bench_python.sh runs it.
$(OUT)/tests/bench/bench_pyframes: $(OUT)/tests/bench/bench_pyframes.o \
		$(OUT)/shipper/stacks/python.o $(COMMON_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(LDFLAGS) $^ -o $@ $(LIBS_COMMON)

# The HTTP/2 parser per 1000 requests, warm; scripts/bench_network_protocols.sh runs it.
$(OUT)/tests/bench/bench_http2: $(OUT)/tests/bench/bench_http2.o \
		$(OUT)/shipper/network/protocols/http/http2.o $(OUT)/shipper/network/protocols/http/hpack.o \
		$(OUT)/shipper/network/protocols/http/http1.o $(OUT)/shipper/network/protocols/l7.o
	$(call msg,LINK,$@)
	$(Q)$(CC) $(LDFLAGS) $^ -o $@ -lnghttp2

# Empty programs on the NETWORK capture's tracepoints: the hooks' own cost, for bench_network.sh.
$(OUT)/tests/bench/hook_floor.bpf.o: tests/bench/hook_floor.bpf.c $(OUT)/vmlinux.h
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(@D) && $(CLANG) -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -I$(OUT) -c $< -o $@
$(OUT)/tests/bench/hook_floor.skel.h: $(OUT)/tests/bench/hook_floor.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@
$(OUT)/tests/bench/hook_floor: tests/bench/hook_floor.c $(OUT)/common/tlssite.o \
		$(OUT)/tests/bench/hook_floor.skel.h
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -I$(OUT)/tests/bench $< $(OUT)/common/tlssite.o -o $@ $(LDFLAGS) -lbpf \
		-lelf -lz
# Plain and TLS 64-byte round trips in one process, for bench_network_tls.sh: the TLS probes' cost.
$(OUT)/tests/bench/tls_calls: tests/bench/tls_calls.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D) && $(CC) $(CFLAGS) $< -o $@ $(LDFLAGS) -lssl -lcrypto

# Every C file of the tree, tracked or new (generated files and build outputs are ignored);
# the style is .clang-format's. format-check fails where clang-format would change a line.
FORMAT_SRCS = $(wildcard $(shell git ls-files --cached --others --exclude-standard -- '*.c' '*.h'))
format:
	clang-format -i $(FORMAT_SRCS)
format-check:
	clang-format --dry-run -Werror $(FORMAT_SRCS)

# Fuzz targets, tests/fuzz/fuzz_*.c: libFuzzer with ASan and UBSan, every source compiled
# again by clang into $(OUT)/fuzz/obj (never the gcc objects). `make fuzz` runs each target for
# FUZZ_SECONDS, `make fuzz-smoke` for 10 s. Inputs found go to $(OUT)/fuzz/corpus/<target>, the
# seeds in tests/fuzz/corpus/<target> are only read; a crash leaves $(OUT)/fuzz/artifacts/.
FUZZ_CC      ?= $(CLANG)
FUZZ_SECONDS ?= 60
FUZZ_MAX_LEN ?= 65536
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=all
FUZZ_CFLAGS  := -std=gnu11 -g -O1 -fno-omit-frame-pointer -Wall -Wextra -Werror \
                -Wno-missing-field-initializers -I. -I$(OUT) -idirafter $(OUT)/proto \
                -DROVER_DEBUG=0 $(FUZZ_SAN) -fsanitize=fuzzer-no-link
FUZZ_LIBS    := $(LIBS_SHIPPER) $(LIBS_GRPC) -ljson-c -lpthread -lnghttp2
FUZZ_TARGETS := $(patsubst tests/fuzz/%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_BINS    := $(addprefix $(OUT)/fuzz/,$(FUZZ_TARGETS))
# What the shipper links (its OAP client included), main.c and its seccomp policy excepted;
# the supervisor's parsers of backend commands and continuous profiling policies. The
# SkyWalking protocol objects are compiled again by clang as well.
FUZZ_SRCS    := $(COMMON_SRCS) $(SHIPPER_SRCS) $(CONFIG_SRCS) $(GRPC_SRCS) policy/grpc.c \
                supervisor/backend/commands.c supervisor/continuous/cpolicy.c \
                supervisor/discovery/k8sobj.c \
                $(patsubst %,tests/fuzz/%.c,$(FUZZ_TARGETS))
FUZZ_OBJS    := $(patsubst %.c,$(OUT)/fuzz/obj/%.o,$(FUZZ_SRCS))
FUZZ_SW_OBJS := $(patsubst %,$(OUT)/fuzz/obj/proto/%.pb-c.o,$(SW_PROTOS))
FUZZ_LIBOBJS := $(filter-out $(OUT)/fuzz/obj/tests/%,$(FUZZ_OBJS)) $(OUT)/fuzz/obj/profile.pb-c.o \
                $(FUZZ_SW_OBJS)

$(FUZZ_OBJS): $(OUT)/fuzz/obj/%.o: %.c | $(GENERATED)
	$(call msg,FUZZ-CC,$@)
	$(Q)mkdir -p $(@D) && $(FUZZ_CC) $(FUZZ_CFLAGS) -MMD -MP -c $< -o $@

$(OUT)/fuzz/obj/profile.pb-c.o: $(PROTO_PPROF)
	$(call msg,FUZZ-CC,$@)
	$(Q)mkdir -p $(@D) && $(FUZZ_CC) $(FUZZ_CFLAGS) -Wno-unused-parameter -c $< -o $@

$(FUZZ_SW_OBJS): $(OUT)/fuzz/obj/proto/%.pb-c.o: $(OUT)/proto/%.pb-c.c | $(SW_PROTO_HDRS)
	$(call msg,FUZZ-CC,$@)
	$(Q)mkdir -p $(@D) && $(FUZZ_CC) $(FUZZ_CFLAGS) -I$(OUT)/proto -Wno-unused-parameter -c $< -o $@

$(FUZZ_BINS): $(OUT)/fuzz/%: $(OUT)/fuzz/obj/tests/fuzz/%.o $(FUZZ_LIBOBJS)
	$(call msg,FUZZ-LD,$@)
	$(Q)$(FUZZ_CC) $(FUZZ_SAN) -fsanitize=fuzzer $^ -o $@ $(FUZZ_LIBS)

# $(call fuzz_run,SECONDS): each target in turn; the first failure stops with its log's tail.
define fuzz_run
	$(Q)mkdir -p $(OUT)/fuzz/artifacts && for t in $(FUZZ_TARGETS); do \
		mkdir -p $(OUT)/fuzz/corpus/$$t; \
		printf '  %-8s %s\n' FUZZ "$$t, $(1) s"; \
		UBSAN_OPTIONS=$${UBSAN_OPTIONS:-print_stacktrace=1} $(OUT)/fuzz/$$t -max_len=$(FUZZ_MAX_LEN) \
			-max_total_time=$(1) -timeout=10 -rss_limit_mb=2048 \
			-artifact_prefix=$(OUT)/fuzz/artifacts/$$t- \
			$(OUT)/fuzz/corpus/$$t tests/fuzz/corpus/$$t >$(OUT)/fuzz/$$t.log 2>&1 || { \
			tail -n 80 $(OUT)/fuzz/$$t.log; \
			echo "fuzz: $$t failed, log in $(OUT)/fuzz/$$t.log"; exit 1; }; \
		$(if $(filter 1,$(V)),cat $(OUT)/fuzz/$$t.log;) \
		printf '  %-8s %s, %s inputs in its corpus\n' "" "$$(grep '^Done' $(OUT)/fuzz/$$t.log)" \
			"$$(ls $(OUT)/fuzz/corpus/$$t | wc -l)"; \
	done
endef

.PHONY: fuzz-smoke fuzz-short fuzz-replay fuzz-corpus fuzz-long fuzz-minimize
fuzz: $(FUZZ_BINS)
	$(call fuzz_run,$(FUZZ_SECONDS))

fuzz-smoke: $(FUZZ_BINS)
	$(call fuzz_run,10)

# 5 s of search per target (inputs found are kept in build/fuzz/corpus, so each run goes on
# from the last). Not in `make test`: a finding there would gate on luck; `make soak` runs it.
fuzz-short: $(FUZZ_BINS)
	$(call fuzz_run,5)

# Depth: every target to FUZZ_LONG_RUNS executions (10M) or FUZZ_LONG_SECONDS (3600) each,
# whichever comes first, at niceness 19; figures to $(OUT)/fuzz/fuzz-long.md
# (scripts/fuzz-long.sh; FUZZ_TARGETS_LONG names a subset). Hours: not in test or soak.
fuzz-long: $(FUZZ_BINS)
	$(Q)OUT=$(OUT) scripts/fuzz-long.sh $(FUZZ_TARGETS_LONG)

# Shrinks what the searches found to the inputs that add coverage, into the repo's corpus of
# each target (tests/fuzz/corpus/<target>/min-*, replaced each time): `make test` replays them.
fuzz-minimize: $(FUZZ_BINS)
	$(Q)for t in $(FUZZ_TARGETS); do \
		[ -d $(OUT)/fuzz/corpus/$$t ] || continue; \
		rm -f tests/fuzz/corpus/$$t/min-*; \
		rm -rf $(OUT)/fuzz/min/$$t && mkdir -p $(OUT)/fuzz/min/$$t && \
		$(OUT)/fuzz/$$t -merge=1 -max_len=$(FUZZ_MAX_LEN) $(OUT)/fuzz/min/$$t \
			tests/fuzz/corpus/$$t $(OUT)/fuzz/corpus/$$t > $(OUT)/fuzz/$$t.min.log 2>&1 || { \
			tail -n 20 $(OUT)/fuzz/$$t.min.log; exit 1; }; \
		seeds=$$(find tests/fuzz/corpus/$$t -type f -exec sha1sum {} + | cut -c1-40); \
		for f in $(OUT)/fuzz/min/$$t/*; do \
			[ -e "$$f" ] || continue; \
			echo "$$seeds" | grep -qx "$$(sha1sum < $$f | cut -c1-40)" || \
				cp $$f tests/fuzz/corpus/$$t/min-$$(basename $$f); \
		done; \
		printf '  %-8s %s: %s inputs\n' MIN "$$t" "$$(ls tests/fuzz/corpus/$$t | wc -l)"; \
	done

# What `make test` runs: every fuzz target over its seed corpus, no random search, so the gate
# is deterministic; `make fuzz` explores.
fuzz-replay: $(FUZZ_BINS)
	$(Q)for t in $(FUZZ_TARGETS); do \
		printf '  %-8s %s\n' REPLAY "$$t"; \
		$(OUT)/fuzz/$$t -runs=0 tests/fuzz/corpus/$$t > $(OUT)/fuzz/$$t.replay.log 2>&1 || { \
			tail -n 40 $(OUT)/fuzz/$$t.replay.log; exit 1; }; \
	done

# Regenerates the seeds in tests/fuzz/corpus (after a change to common/msg.h, say).
FUZZ_SEED_ELF := -Os -fno-asynchronous-unwind-tables -fno-ident -nostdlib -Wl,--build-id \
                 -Wl,-z,max-page-size=16 -Wl,-z,noseparate-code -Wl,-z,norelro
$(OUT)/fuzz/gen_corpus: tests/fuzz/gen_corpus.c common/ipc.h common/msg.h common/netrec.h
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D) && $(CC) $(CFLAGS) $(LDFLAGS) $< -o $@

fuzz-corpus: $(OUT)/fuzz/gen_corpus
	$(Q)$(OUT)/fuzz/gen_corpus tests/fuzz/corpus
	$(Q)for f in tests/fuzz/seeds/fuzz_commands/*.txtpb; do \
		protoc --encode=skywalking.v3.Commands -Iproto proto/common/Command.proto < $$f \
			> tests/fuzz/corpus/fuzz_commands/$$(basename $$f .txtpb) || exit 1; done
	$(Q)cp configs/rover_configs.yaml tests/fuzz/corpus/fuzz_config/
	$(Q)mkdir -p tests/fuzz/corpus/fuzz_elfsym && cd tests/fuzz/corpus/fuzz_elfsym && \
		$(CC) $(FUZZ_SEED_ELF) -shared -fPIC ../../seed_elf.c -o lib.so && \
		$(CC) $(FUZZ_SEED_ELF) -m32 -shared -fPIC ../../seed_elf.c -o lib32.so && \
		$(CC) $(FUZZ_SEED_ELF) -static -no-pie ../../seed_elf.c -o exec && \
		$(CC) $(FUZZ_SEED_ELF) -fPIE -pie ../../seed_elf.c -o pie && \
		objcopy --strip-all --add-gnu-debuglink=lib.so lib.so lib_stripped.so && \
		objcopy --only-keep-debug lib.so lib.debug && xz -f lib.debug && \
		objcopy --strip-all --add-section .gnu_debugdata=lib.debug.xz lib.so lib_minidebug.so && \
		rm lib.debug.xz && chmod a-x lib.so lib32.so exec pie lib_stripped.so lib_minidebug.so
	$(Q)mkdir -p tests/fuzz/corpus/fuzz_tlsfind && cd tests/fuzz/corpus/fuzz_tlsfind && \
		$(CC) $(FUZZ_SEED_ELF) -shared -fPIC ../../seed_tls.c -o libssl.so && \
		$(CC) $(FUZZ_SEED_ELF) -shared -fPIC -DBORING ../../seed_tls.c -o libssl_boring.so && \
		$(CC) $(FUZZ_SEED_ELF) -m32 -shared -fPIC ../../seed_tls.c -o libssl32.so && \
		$(CC) $(FUZZ_SEED_ELF) -static -no-pie -DGO=0xfffffff0 ../../seed_tls.c -o go && \
		$(CC) $(FUZZ_SEED_ELF) -static -no-pie -DGO=0xfffffffa ../../seed_tls.c -o go116 && \
		$(CC) $(FUZZ_SEED_ELF) -static -no-pie -DGO=0xfffffff0 -DRETS=61 ../../seed_tls.c \
			-o go_64probes && \
		objcopy --strip-all go go_stripped && \
		chmod a-x libssl.so libssl_boring.so libssl32.so go go116 go_64probes go_stripped
	$(Q)mkdir -p tests/fuzz/corpus/fuzz_pyattach && cd tests/fuzz/corpus/fuzz_pyattach && \
		$(CC) $(FUZZ_SEED_ELF) -shared -fPIC -DVERSION=0x030c01f0 ../../seed_python.c \
			-o py312.so && \
		$(CC) $(FUZZ_SEED_ELF) -shared -fPIC -DVERSION=0x030d00f0 -DDEBUG_OFFSETS \
			../../seed_python.c -o py313.so && \
		$(CC) $(FUZZ_SEED_ELF) -shared -fPIC -DADDED=PyAIter_Check ../../seed_python.c \
			-o py310.so && \
		$(CC) $(FUZZ_SEED_ELF) -shared -fPIC -DADDED=PyCode_NewWithPosOnlyArgs \
			../../seed_python.c -o py38.so && \
		$(CC) $(FUZZ_SEED_ELF) -shared -fPIC -DVERSION=0x030701f0 ../../seed_python.c \
			-o py37.so && \
		chmod a-x py312.so py313.so py310.so py38.so py37.so
	$(Q)mkdir -p tests/fuzz/corpus/fuzz_jvmstructs && $(CC) $(CFLAGS) -I. -I$(OUT) \
		tests/fuzz/seed_jvm.c worker/elffile.c worker/jvmstructs.c -o $(OUT)/fuzz/seed_jvm && \
		$(OUT)/fuzz/seed_jvm tests/fuzz/corpus/fuzz_jvmstructs \
			jdk17.so=/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so \
			jdk25.so=/usr/lib/jvm/temurin-25-jdk-amd64/lib/server/libjvm.so
	$(Q)mkdir -p tests/fuzz/corpus/fuzz_v8structs && $(CC) $(CFLAGS) -I. -I$(OUT) \
		tests/fuzz/seed_v8.c worker/elffile.c worker/v8structs.c -o $(OUT)/fuzz/seed_v8 && \
		$(OUT)/fuzz/seed_v8 tests/fuzz/corpus/fuzz_v8structs /usr/bin/node

clean:
	rm -rf $(OUT) out

-include $(shell find $(OUT) -name '*.d' 2>/dev/null)
