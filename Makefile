# heapattach: one non-recursive Makefile.
ARCH    ?= x86_64
CC      ?= gcc
PKGS    := libunwind-ptrace libunwind-generic libelf libdw capstone zlib
B       := build
CFLAGS  ?= -O2 -g
override CFLAGS += -std=gnu11 -Wall -Wextra -D_GNU_SOURCE -Isrc -Iinclude -Isrc/arch/$(ARCH) -MMD -MP
override CFLAGS += $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
ifeq ($(CI),true)
override CFLAGS += -Werror
endif
LDLIBS  += $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lm
VERSION := 0.1.0
override CFLAGS += -DHEAPATTACH_VERSION='"$(VERSION)"'

AGENT_SRC := src/arch/$(ARCH)/agent.c
LIB_SRC  := $(filter-out src/cli/main.c,$(wildcard src/*/*.c)) $(filter-out $(AGENT_SRC),$(wildcard src/arch/$(ARCH)/*.c))
LIB_OBJ  := $(LIB_SRC:%.c=$(B)/%.o) $(B)/gen/agent_blob.o
MAIN_OBJ := $(B)/src/cli/main.o
UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(B)/tests/%)
TOOL_SRC := $(wildcard tests/tools/*.c)
TOOL_BIN := $(TOOL_SRC:tests/tools/%.c=$(B)/tools/%)
FIX_C    := $(filter-out fixtures/swaplib.c fixtures/sharefs_alloc.c fixtures/mi2wrap.c \
		fixtures/ctlwrap.c,$(wildcard fixtures/*.c))
FIX_CXX  := $(wildcard fixtures/*.cc)
FIX_BIN  := $(FIX_C:fixtures/%.c=$(B)/fixtures/%) $(FIX_CXX:fixtures/%.cc=$(B)/fixtures/%) \
	    $(B)/fixtures/libswapa.so $(B)/fixtures/libswapb.so $(B)/fixtures/libsharefs_alloc.so \
	    $(B)/fixtures/libmi2wrap.so $(B)/fixtures/libctlwrap.so
# fixtures/*.go: Go programs (cgo), built only where go is (GO, or go)
GO       ?= go
FIX_GO   := $(if $(shell command -v $(GO) 2>/dev/null),$(patsubst fixtures/%.go,$(B)/fixtures/%,$(wildcard fixtures/*.go)) \
	    $(B)/fixtures/cgoalloc_pie $(B)/fixtures/cgoalloc_static $(B)/fixtures/cgoalloc_stripped)
FIX_BIN  += $(FIX_GO)
BENCH_SRC := $(wildcard bench/*.c)
BENCH_BIN := $(BENCH_SRC:bench/%.c=$(B)/bench/%)

ifneq ($(V),1)
Q = @
QCC = @printf '  CC      %s\n' $@;
else
QCC =
endif

.PHONY: all deps check-deps test check unit fixtures tools demo asan clean bench fuzz fuzzers \
	install uninstall deb image

all: heapattach

# Bound at startup (-z now): the sessions of a run over several processes,
# forked from it, do not each resolve the same symbols again.
heapattach: $(MAIN_OBJ) $(B)/libheapattach.a
	$(QCC)$(CC) $(CFLAGS) $(LDFLAGS) -Wl,-z,now -o $@ $^ $(LDLIBS)

# The same binary in the build directory: make asan links build-asan/heapattach,
# which the hostile-target tests run too when it is there.
$(B)/heapattach: $(MAIN_OBJ) $(B)/libheapattach.a
	$(QCC)$(CC) $(CFLAGS) $(LDFLAGS) -Wl,-z,now -o $@ $^ $(LDLIBS)

$(B)/libheapattach.a: $(LIB_OBJ)
	$(Q)rm -f $@ && ar rcs $@ $^

$(B)/%.o: %.c
	@mkdir -p $(dir $@)
	$(QCC)$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

# The in-target agent: freestanding, never instrumented (own flags, not
# CFLAGS), linked flat at 0 and embedded as a blob; gen/agent_syms.h gives
# the entry offsets. No undefined symbols, data, bss or absolute relocations,
# and its deepest chain of frames (from gcc's call graph) within what the
# budget counts for it (agent.h, AGENT_STACK_BLOB): it runs on the target's
# stack (docs/threat-model.md, "the agent as a guest"). Its unwind tables
# stay out of the blob: gen/agent_cfi_rows.h makes the tool's rules of them
# (agent_cfi.awk), for stacks whose thread a signal interrupted in it.
AGENT_STACK_MAX = $$(sed -n 's/^\#define AGENT_STACK_BLOB[[:space:]]*\([0-9]*\).*/\1/p' src/arch/$(ARCH)/agent.h)
AGENT_CFLAGS := -std=gnu11 -O2 -Wall -Wextra -ffreestanding -fno-builtin -nostdlib \
	-fPIC -fno-plt -fvisibility=hidden -fno-stack-protector -fno-jump-tables \
	-fasynchronous-unwind-tables -fno-exceptions \
	-fno-tree-loop-distribute-patterns -fcf-protection=none -mgeneral-regs-only \
	-Iinclude -Isrc/arch/$(ARCH) -MMD -MP $(if $(filter true,$(CI)),-Werror)

$(B)/gen/agent.o: $(AGENT_SRC) src/arch/$(ARCH)/agent_stack.awk src/arch/$(ARCH)/agent.h
	@mkdir -p $(dir $@)
	$(QCC)$(CC) $(AGENT_CFLAGS) -fcallgraph-info=su -c -o $@ $< || { rm -f $@; exit 1; }
	$(Q)max=$(AGENT_STACK_MAX); if [ -z "$$max" ] || grep -q 'bytes (dynamic)' $(@:.o=.ci) || \
	    ! awk -v max=$$max -f src/arch/$(ARCH)/agent_stack.awk $(@:.o=.ci) > $(@:.o=.stack); then \
		echo "$@: the agent's stack past AGENT_STACK_BLOB (agent.h, $$max bytes), or unbounded:"; \
		cat $(@:.o=.stack); rm -f $@; exit 1; fi
	$(Q)if [ -n "$$(nm -u $@)" ]; then echo "$@: undefined symbols: $$(nm -u $@)"; rm -f $@; exit 1; fi
	$(Q)if readelf -rW $@ | grep -Eq 'R_X86_64_(64|32|32S|GOT|COPY|GLOB|JUMP|RELATIVE)'; then \
		echo "$@: absolute or GOT relocation"; readelf -rW $@; rm -f $@; exit 1; fi
	$(Q)if [ -n "$$(objdump -h $@ | awk '$$2 ~ /^\.(data|bss)/ && $$3 !~ /^0+$$/')" ]; then \
		echo "$@: has data or bss"; rm -f $@; exit 1; fi

$(B)/gen/agent.bin: $(B)/gen/agent.o src/arch/$(ARCH)/agent.lds
	$(Q)ld -static -nostdlib -T src/arch/$(ARCH)/agent.lds -o $(B)/gen/agent.elf $<
	$(Q)objcopy -O binary -j .text $(B)/gen/agent.elf $@

$(B)/gen/agent_syms.h: $(B)/gen/agent.bin
	$(Q)nm $(B)/gen/agent.elf | awk '$$3 ~ /^agent_(alloc|free|guest_(ld|fs0)_(at|fix))$$/ \
		{ printf "#define AGENT_OFF_%s 0x%s\n", toupper(substr($$3, 7)), $$1 }' > $@.tmp
	$(Q)test $$(wc -l < $@.tmp) -eq 6 && mv $@.tmp $@

$(B)/gen/agent_blob.o: $(B)/gen/agent.bin
	$(Q)printf '\t.section .rodata\n\t.balign 64\n\t.globl agent_blob\nagent_blob:\n\t.incbin "%s"\n\t.globl agent_blob_end\nagent_blob_end:\n\t.section .note.GNU-stack,"",@progbits\n' \
		$(B)/gen/agent.bin > $(B)/gen/agent_blob.S
	$(QCC)$(CC) -c -o $@ $(B)/gen/agent_blob.S

$(B)/gen/agent_cfi_rows.h: $(B)/gen/agent.bin src/arch/$(ARCH)/agent_cfi.awk
	$(Q)readelf -wF $(B)/gen/agent.elf | awk -f src/arch/$(ARCH)/agent_cfi.awk > $@.tmp && mv $@.tmp $@

$(B)/src/arch/$(ARCH)/tramp_fast.o: $(B)/gen/agent_syms.h
$(B)/src/arch/$(ARCH)/tramp_fast.o: override CFLAGS += -I$(B)/gen
$(B)/src/arch/$(ARCH)/agent_cfi.o: $(B)/gen/agent_cfi_rows.h
$(B)/src/arch/$(ARCH)/agent_cfi.o: override CFLAGS += -I$(B)/gen

# Helpers the unit tests and the tools link with (tests/unit, not test_*.c).
TEST_HELP := $(B)/testhelp/testtarget.o
.SECONDARY: $(TEST_HELP)

$(B)/testhelp/%.o: tests/unit/%.c
	@mkdir -p $(dir $@)
	$(QCC)$(CC) $(CPPFLAGS) $(CFLAGS) -Itests/unit -c -o $@ $<

$(B)/tests/%: tests/unit/%.c $(B)/libheapattach.a $(TEST_HELP) tests/unit/harness.h
	@mkdir -p $(dir $@)
	$(QCC)$(CC) $(CFLAGS) -Itests/unit -o $@ $< $(TEST_HELP) $(B)/libheapattach.a $(LDLIBS)

$(B)/tools/%: tests/tools/%.c $(B)/libheapattach.a $(TEST_HELP)
	@mkdir -p $(dir $@)
	$(QCC)$(CC) $(CFLAGS) -Itests/unit -o $@ $< $(TEST_HELP) $(B)/libheapattach.a $(LDLIBS)

# Fixtures: victims built -O1 with frame pointers; each may add flags in a
# first-line comment "/* build: FLAGS */" (e.g. -static, -no-pie, -s). One
# whose flags name a file this machine lacks (an allocator's library) is
# built as a script that exits 77; its tests check for the file and skip.
FIX_FLAGS = $$(sed -n '1s|.*/\* build: \(.*\) \*/.*|\1|p' $<)
FIX_STUB = for f in $(FIX_FLAGS); do case $$f in /*) [ -e "$$f" ] || { \
	printf '\043!/bin/sh\necho "%s: no %s" >\0462\nexit 77\n' $@ "$$f" >$@; chmod +x $@; exit 0; };; \
	esac; done

$(B)/fixtures/%: fixtures/%.c $(wildcard fixtures/*.h) $(wildcard include/*.h src/*/*.h)
	@mkdir -p $(dir $@)
	$(QCC)$(FIX_STUB); $(CC) -O1 -g -fno-omit-frame-pointer -fno-inline -pthread -Ifixtures -o $@ $< $(FIX_FLAGS) $(FIX_LIBS)

# fixtures/dlswap's two libraries: one source, other names, one size
$(B)/fixtures/libswapa.so $(B)/fixtures/libswapb.so: $(B)/fixtures/libswap%.so: fixtures/swaplib.c
	@mkdir -p $(dir $@)
	$(QCC)$(CC) -O1 -g -fno-omit-frame-pointer -shared -fPIC -DSWAP_$$(echo $* | tr a-z A-Z) -o $@ $<

# fixtures/sharefs's allocator, in a library of its own: an allocator's
# text is where nested calls come from, so not the program's
$(B)/fixtures/libsharefs_alloc.so: fixtures/sharefs_alloc.c
	@mkdir -p $(dir $@)
	$(QCC)$(CC) -O1 -g -fno-omit-frame-pointer -shared -fPIC -o $@ $<

$(B)/fixtures/sharefs: $(B)/fixtures/libsharefs_alloc.so
$(B)/fixtures/sharefs: FIX_LIBS = -L$(B)/fixtures -lsharefs_alloc -Wl,-rpath,'$$ORIGIN'

# fixtures/mi2wrap.c: an LD_PRELOAD wrapper of glibc's malloc with its own
# mallinfo2; fixtures/ctlwrap.c: an LD_PRELOAD object with its own mallctl
$(B)/fixtures/libmi2wrap.so $(B)/fixtures/libctlwrap.so: $(B)/fixtures/lib%.so: fixtures/%.c
	@mkdir -p $(dir $@)
	$(QCC)$(CC) -O1 -g -shared -fPIC -o $@ $< -ldl

$(B)/fixtures/%: fixtures/%.cc $(wildcard fixtures/*.h)
	@mkdir -p $(dir $@)
	$(QCC)$(FIX_STUB); g++ -O1 -g -fno-omit-frame-pointer -fno-inline -pthread -Ifixtures -o $@ $< $(FIX_FLAGS)

# its own build cache: HOME may be read-only
$(B)/fixtures/%: fixtures/%.go
	@mkdir -p $(dir $@)
	$(QCC)CGO_ENABLED=1 GOCACHE=$(abspath $(B))/gocache $(GO) build -o $@ $<

# fixtures/cgoalloc.go also as a PIE, linked statically, and without symbols
CGOALLOC := $(B)/fixtures/cgoalloc_pie $(B)/fixtures/cgoalloc_static $(B)/fixtures/cgoalloc_stripped
$(B)/fixtures/cgoalloc_pie: GO_FLAGS = -buildmode=pie
$(B)/fixtures/cgoalloc_static: GO_FLAGS = -ldflags='-linkmode external -extldflags "-static"'
$(B)/fixtures/cgoalloc_stripped: GO_FLAGS = -ldflags='-s -w'
$(CGOALLOC): $(B)/fixtures/cgoalloc_%: fixtures/cgoalloc.go
	@mkdir -p $(dir $@)
	$(QCC)CGO_ENABLED=1 GOCACHE=$(abspath $(B))/gocache $(GO) build $(GO_FLAGS) -o $@ $< 2>$@.log || \
		{ cat $@.log; exit 1; }

$(B)/bench/%: bench/%.c fixtures/jitstub.h
	@mkdir -p $(dir $@)
	$(QCC)$(CC) -O2 -g -pthread -o $@ $<

fixtures: $(FIX_BIN)
tools: $(TOOL_BIN)
unit: $(UNIT_BIN)

# Install what the build and the tests need (Debian).
deps:
	@sh tests/deps.sh install

check-deps:
	@sh tests/deps.sh check || sh tests/deps.sh install

test check: check-deps
	$(Q)$(MAKE) --no-print-directory all unit tools fixtures
	$(Q)sh tests/run.sh

asan:
	$(Q)$(MAKE) --no-print-directory B=build-asan CFLAGS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer" \
		LDFLAGS="-fsanitize=address,undefined" build-asan/libheapattach.a
	$(Q)$(MAKE) --no-print-directory B=build-asan CFLAGS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer" \
		LDFLAGS="-fsanitize=address,undefined" LDLIBS="-fsanitize=address,undefined $(LDLIBS)" unit build-asan/heapattach
	$(Q)$(MAKE) --no-print-directory B=build-asan fixtures
	$(Q)UNIT_ONLY=1 BUILD=build-asan sh tests/run.sh

# Fuzzing (libFuzzer, clang): the ELF, maps, DWARF, perf map, pprof and Python line-table readers, the HTTP request parser,
# the snapshot's walkers (glibc's, pymalloc's and Python types', jemalloc's, mimalloc's), each for
# FUZZ_SECONDS, from seeds made of the fixtures (tests/fuzz/run.sh).
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 20
FB           := build-fuzz
FUZZ_CFLAGS  := -O1 -g -std=gnu11 -D_GNU_SOURCE -Isrc -Iinclude -Isrc/arch/$(ARCH) -MMD -MP \
	$(shell pkg-config --cflags $(PKGS) 2>/dev/null) \
	-Wall -Wextra $(if $(filter true,$(CI)),-Werror) \
	-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
FUZZ_LIB_SRC := src/model/elfobj.c src/model/proc.c src/model/tfile.c src/model/tcred.c src/model/zsection.c src/model/debugfile.c src/stacks/unwind.c src/stacks/frametab.c \
	src/stacks/unwind_objs.c src/stacks/unwind_pcache.c src/stacks/unwind_acc.c \
	src/stacks/frametab_objs.c src/stacks/frametab_cfi.c src/stacks/frametab_ends.c \
	src/model/mapguard.c src/base/xmalloc.c src/base/log.c src/model/perfmap.c src/report/report_pprof.c \
	src/model/target.c src/model/tmem.c src/ptrace/remote.c src/ptrace/remote_state.c \
	src/ptrace/remote_stop.c src/ptrace/gadgets.c src/arch/$(ARCH)/sigframe.c \
	src/python/pylines.c src/stacks/gocgo.c src/arch/$(ARCH)/disasm.c \
	src/model/census.c src/model/glibcwalk.c src/model/mmchunks.c \
	src/snapshot/glibcblocks.c src/snapshot/heapgraph.c src/serve/httpreq.c \
	src/snapshot/pyblocks.c src/snapshot/pytypes.c src/snapshot/names.c src/snapshot/roots.c src/snapshot/globals.c \
	src/stacks/symbolize.c src/model/debugfetch.c \
	src/snapshot/jeblocks.c src/snapshot/jefind.c src/snapshot/jetree.c src/snapshot/jetcache.c src/snapshot/jeprof.c src/snapshot/jerate.c \
	src/snapshot/miblocks.c src/snapshot/tcblocks.c src/snapshot/tcfind.c src/snapshot/tcspans.c src/snapshot/tcsample.c src/snapshot/allocsites.c
FUZZ_LIB_OBJ := $(FUZZ_LIB_SRC:%.c=$(FB)/%.o)
FUZZ_BIN     := $(patsubst tests/fuzz/%.c,$(FB)/%,$(wildcard tests/fuzz/fuzz_*.c))

$(FB)/src/%.o: src/%.c
	@mkdir -p $(dir $@)
	$(QCC)$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c -o $@ $<

$(FB)/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_LIB_OBJ)
	@mkdir -p $(dir $@)
	$(QCC)$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_LIB_OBJ) $(LDLIBS)

.SECONDARY: $(FUZZ_LIB_OBJ)
fuzzers: $(FUZZ_BIN)

fuzz: check-deps
	$(Q)$(MAKE) --no-print-directory fixtures tools fuzzers
	$(Q)FUZZ_SECONDS=$(FUZZ_SECONDS) FB=$(FB) sh tests/fuzz/run.sh

demo: check-deps
	$(Q)$(MAKE) --no-print-directory all fixtures
	$(Q)sh tests/demo.sh

bench: all
	$(Q)$(MAKE) --no-print-directory $(BENCH_BIN)

# Install the binary and the man page under PREFIX (inside DESTDIR if set).
PREFIX  ?= /usr/local
BINDIR  ?= $(PREFIX)/bin
MANDIR  ?= $(PREFIX)/share/man

install: heapattach
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1
	install -m 0755 heapattach $(DESTDIR)$(BINDIR)/heapattach
	install -m 0644 man/heapattach.1 $(DESTDIR)$(MANDIR)/man1/heapattach.1

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/heapattach $(DESTDIR)$(MANDIR)/man1/heapattach.1

# The Debian package, built by dpkg-buildpackage from a copy of the tree
# in $(B)/deb (its version is debian/changelog's, which must be VERSION).
DEB_ARCH := $(shell dpkg --print-architecture 2>/dev/null)
DEB      := $(B)/deb/heapattach_$(VERSION)_$(DEB_ARCH).deb
DEB_TREE := Makefile LICENSE README.md src include man debian
DEB_DEPS := Makefile $(shell find src include man debian -type f 2>/dev/null)

deb: $(DEB)

$(DEB): $(DEB_DEPS)
	$(Q)v=$$(dpkg-parsechangelog -l debian/changelog -SVersion) && [ "$$v" = "$(VERSION)" ] || \
		{ echo "debian/changelog says $$v, the Makefile $(VERSION)"; exit 1; }
	$(Q)rm -rf $(B)/deb && mkdir -p $(B)/deb/heapattach-$(VERSION)
	$(Q)tar -cf - $(DEB_TREE) | tar -xf - -C $(B)/deb/heapattach-$(VERSION)
	$(Q)cd $(B)/deb/heapattach-$(VERSION) && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL \
		DEB_BUILD_OPTIONS="parallel=2 $(DEB_BUILD_OPTIONS)" dpkg-buildpackage -b -us -uc \
		>../build.log 2>&1 || { tail -n 30 ../build.log; exit 1; }
	$(Q)ls -l $@

# The sidecar image: the .deb's files and the libraries they need, no
# registry (tests/integration/sidecar.test runs it).
IMAGE ?= localhost/heapattach:$(VERSION)

image: $(DEB)
	$(Q)sh pkg/mkimage.sh $(DEB) $(IMAGE) $(B)/image

clean:
	rm -rf $(B) build-asan $(FB) heapattach

-include $(shell find $(B) $(FB) -name '*.d' 2>/dev/null)
