# heapattach: one non-recursive Makefile.
ARCH    ?= x86_64
CC      ?= gcc
PKGS    := libunwind-ptrace libunwind-generic libelf libdw capstone zlib
B       := build
CFLAGS  ?= -O2 -g
override CFLAGS += -std=gnu11 -Wall -Wextra -D_GNU_SOURCE -Iinclude -Isrc/arch/$(ARCH) -MMD -MP
override CFLAGS += $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
ifeq ($(CI),true)
override CFLAGS += -Werror
endif
LDLIBS  += $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lm
VERSION := 0.1.0
override CFLAGS += -DHEAPATTACH_VERSION='"$(VERSION)"'

LIB_SRC  := $(filter-out src/main.c,$(wildcard src/*.c)) $(wildcard src/arch/$(ARCH)/*.c)
LIB_OBJ  := $(LIB_SRC:%.c=$(B)/%.o)
MAIN_OBJ := $(B)/src/main.o
UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(B)/tests/%)
TOOL_SRC := $(wildcard tests/tools/*.c)
TOOL_BIN := $(TOOL_SRC:tests/tools/%.c=$(B)/tools/%)
FIX_C    := $(wildcard fixtures/*.c)
FIX_CXX  := $(wildcard fixtures/*.cc)
FIX_BIN  := $(FIX_C:fixtures/%.c=$(B)/fixtures/%) $(FIX_CXX:fixtures/%.cc=$(B)/fixtures/%)
BENCH_SRC := $(wildcard bench/*.c)
BENCH_BIN := $(BENCH_SRC:bench/%.c=$(B)/bench/%)

ifneq ($(V),1)
Q = @
QCC = @printf '  CC      %s\n' $@;
else
QCC =
endif

.PHONY: all deps check-deps test check unit fixtures tools demo asan clean bench

all: heapattach

heapattach: $(MAIN_OBJ) $(B)/libheapattach.a
	$(QCC)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(B)/libheapattach.a: $(LIB_OBJ)
	$(Q)rm -f $@ && ar rcs $@ $^

$(B)/%.o: %.c
	@mkdir -p $(dir $@)
	$(QCC)$(CC) $(CFLAGS) -c -o $@ $<

$(B)/tests/%: tests/unit/%.c $(B)/libheapattach.a tests/unit/harness.h
	@mkdir -p $(dir $@)
	$(QCC)$(CC) $(CFLAGS) -Itests/unit -o $@ $< $(B)/libheapattach.a $(LDLIBS)

$(B)/tools/%: tests/tools/%.c $(B)/libheapattach.a
	@mkdir -p $(dir $@)
	$(QCC)$(CC) $(CFLAGS) -o $@ $< $(B)/libheapattach.a $(LDLIBS)

# Fixtures: victims built -O1 with frame pointers; each may add flags in a
# first-line comment "/* build: FLAGS */" (e.g. -static, -no-pie, -s).
$(B)/fixtures/%: fixtures/%.c fixtures/fixture.h
	@mkdir -p $(dir $@)
	$(QCC)$(CC) -O1 -g -fno-omit-frame-pointer -fno-inline -pthread -Ifixtures -o $@ $< $$(sed -n '1s|.*/\* build: \(.*\) \*/.*|\1|p' $<)

$(B)/fixtures/%: fixtures/%.cc fixtures/fixture.h
	@mkdir -p $(dir $@)
	$(QCC)g++ -O1 -g -fno-omit-frame-pointer -fno-inline -pthread -Ifixtures -o $@ $< $$(sed -n '1s|.*/\* build: \(.*\) \*/.*|\1|p' $<)

$(B)/bench/%: bench/%.c
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
		LDFLAGS="-fsanitize=address,undefined" LDLIBS="-fsanitize=address,undefined $(LDLIBS)" unit
	$(Q)$(MAKE) --no-print-directory B=build-asan fixtures
	$(Q)UNIT_ONLY=1 BUILD=build-asan sh tests/run.sh

demo: check-deps
	$(Q)$(MAKE) --no-print-directory all fixtures
	$(Q)sh tests/demo.sh

bench: all
	$(Q)$(MAKE) --no-print-directory $(BENCH_BIN)

clean:
	rm -rf $(B) build-asan heapattach

-include $(shell find $(B) -name '*.d' 2>/dev/null)
