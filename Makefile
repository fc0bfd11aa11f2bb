# ljmemprof: build, test, install.
#
#   make            build the agent (Lua module + static lib) and the CLI
#   make example    build, profile examples/example.lua, print the report
#   make test       build and run the whole test suite (TAP, via prove)
#   make install    PREFIX=/usr/local DESTDIR= (module where luajit finds it)
#   make bench      benchmarks (not a test; prints measured ratios)
#   make difftest   the differential test's long run: random programs, JIT
#                   off vs on, for DIFFTEST_SECONDS (default 300)
#
# LUAJIT_SRC=/path/to/luajit/source builds against another LuaJIT source;
# by default the Debian source package of the installed `luajit` is fetched
# into build/luajit-src (never committed).

PREFIX     ?= /usr/local
DESTDIR    ?=
LUAJIT     ?= luajit
BUILD      ?= build
LUAJIT_SRC ?= $(BUILD)/luajit-src
CC         ?= cc
CFLAGS     ?= -O2 -g
WARN       := -Wall -Wextra -Wno-unused-parameter
LUA_CPATH_DIR := $(PREFIX)/lib/lua/5.1

# Debian packages the build and the tests need.
DEB_PKGS := luajit libluajit-5.1-dev dpkg-dev lua-cjson gcc make perl clang libclang-rt-14-dev \
            neovim wrk python3-lupa lua-lpeg zlib1g-dev golang-go python3 chromium

AGENT_SRC := src/agent/mp_arm.c src/agent/mp_hook.c src/agent/mp_stack.c src/agent/mp_sym.c src/agent/mp_frame.c src/agent/mp_sink.c src/util/mp_hash.c \
             src/agent/mp_check.c src/agent/mp_names.c src/agent/ljmp_api.c \
             src/agent/lib_ljmemprof.c
AGENT_OBJ := $(patsubst src/%.c,$(BUILD)/agent/%.o,$(AGENT_SRC))
AGENT_HDR := $(wildcard src/agent/*.h src/util/*.h src/format/*.h) include/ljmemprof.h

# The reader side, layer by layer (docs/DESIGN.md): each folder's files
# are picked up by wildcard, so adding a renderer or an analysis is adding
# a file.
LAYERS     := format util reader analysis render
LIB_SRC    := $(foreach d,$(LAYERS),$(wildcard src/$(d)/*.c))
CLI_SRC    := $(wildcard src/cli/*.c)
READER_HDR := $(foreach d,$(LAYERS),$(wildcard src/$(d)/*.h))
CLI_HDR    := $(wildcard src/cli/*.h)
READER_OBJ := $(patsubst src/%.c,$(BUILD)/%.o,$(LIB_SRC))

TEST_C     := $(wildcard tests/c/*.c)
TEST_BIN   := $(patsubst tests/c/%.c,$(BUILD)/tests/%,$(TEST_C))

.PHONY: all deps example test install uninstall bench clean distclean
all: $(BUILD)/ljmemprof.so $(BUILD)/libljmemprof.a $(BUILD)/ljmemprof $(TEST_BIN) \
     $(BUILD)/wrong-layout/ljmemprof.so $(BUILD)/tsan/agent_host $(BUILD)/asan/agent_host

# Install missing Debian packages when root, else say exactly what to run.
deps:
	@missing=""; for p in $(DEB_PKGS); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing:$$missing"; \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing >/dev/null || \
	    { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing >/dev/null; } || exit 1; \
	  else \
	    echo "missing Debian packages; run: sudo apt-get install -y$$missing" >&2; exit 1; \
	  fi; \
	fi

$(BUILD)/luajit-src/src/lj_obj.h:
	@$(MAKE) --no-print-directory deps
	scripts/fetch-luajit-src.sh $(BUILD) >/dev/null

$(BUILD)/agent/%.o: src/%.c $(AGENT_HDR) $(LUAJIT_SRC)/src/lj_obj.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) -fPIC -fvisibility=hidden -D_GNU_SOURCE -DLJMP_BUILD -Iinclude -Isrc -I$(LUAJIT_SRC)/src -c $< -o $@

# The module exports luaopen_ljmemprof and the ljmp_* API only.
$(BUILD)/ljmemprof.so: $(AGENT_OBJ)
	$(CC) -shared -o $@ $(AGENT_OBJ) -ldl -lpthread

# A module deliberately built for another layout (32-bit GC refs), so the
# tests can check that the load-time check refuses it instead of crashing.
$(BUILD)/wrong-layout/ljmemprof.so: $(AGENT_SRC) $(AGENT_HDR) $(LUAJIT_SRC)/src/lj_obj.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -w -fPIC -shared -fvisibility=hidden -D_GNU_SOURCE -DLJMP_BUILD \
	  -DLUAJIT_DISABLE_GC64 -Iinclude -Isrc -I$(LUAJIT_SRC)/src -o $@ $(AGENT_SRC) -ldl -lpthread

# The multi-threaded host of tests/agent-host.t, agent included, under
# ThreadSanitizer and under AddressSanitizer + UBSan (clang, Debian's
# libclang-rt-14-dev).
SAN_CC ?= clang
$(BUILD)/tsan/agent_host: tests/c/agent_host.c $(AGENT_SRC) $(AGENT_HDR) $(LUAJIT_SRC)/src/lj_obj.h
	@mkdir -p $(@D)
	$(SAN_CC) -g -O1 -fsanitize=thread -D_GNU_SOURCE -DLJMP_BUILD -Iinclude -Isrc \
	  -I$(LUAJIT_SRC)/src -o $@ tests/c/agent_host.c $(AGENT_SRC) -lluajit-5.1 -ldl -lpthread
$(BUILD)/asan/agent_host: tests/c/agent_host.c $(AGENT_SRC) $(AGENT_HDR) $(LUAJIT_SRC)/src/lj_obj.h
	@mkdir -p $(@D)
	$(SAN_CC) -g -O1 -fsanitize=address,undefined -fno-sanitize-recover=all \
	  -D_GNU_SOURCE -DLJMP_BUILD -Iinclude -Isrc -I$(LUAJIT_SRC)/src -o $@ \
	  tests/c/agent_host.c $(AGENT_SRC) -lluajit-5.1 -ldl -lpthread

$(BUILD)/libljmemprof.a: $(AGENT_OBJ)
	rm -f $@ && ar rcs $@ $(AGENT_OBJ)

$(BUILD)/%.o: src/%.c $(READER_HDR)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) -Isrc -c $< -o $@

$(BUILD)/ljmemprof: $(READER_OBJ) $(CLI_SRC) $(CLI_HDR) $(READER_HDR)
	$(CC) $(CFLAGS) $(WARN) -Isrc -o $@ $(CLI_SRC) $(READER_OBJ) -lz -lm

$(BUILD)/tests/%: tests/c/%.c $(wildcard tests/c/*.h) $(BUILD)/libljmemprof.a $(READER_OBJ) $(READER_HDR)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) -Iinclude -Isrc -I$(LUAJIT_SRC)/src -o $@ $< \
	  $(READER_OBJ) $(BUILD)/libljmemprof.a -lluajit-5.1 -lz -lm -ldl -lpthread

example: all
	@scripts/example.sh

test: all
	prove tests/

install: all
	install -d $(DESTDIR)$(LUA_CPATH_DIR) $(DESTDIR)$(PREFIX)/bin \
	  $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib
	install -m 0755 $(BUILD)/ljmemprof.so $(DESTDIR)$(LUA_CPATH_DIR)/ljmemprof.so
	install -m 0755 $(BUILD)/ljmemprof $(DESTDIR)$(PREFIX)/bin/ljmemprof
	install -m 0644 include/ljmemprof.h $(DESTDIR)$(PREFIX)/include/ljmemprof.h
	install -m 0644 $(BUILD)/libljmemprof.a $(DESTDIR)$(PREFIX)/lib/libljmemprof.a

uninstall:
	rm -f $(DESTDIR)$(LUA_CPATH_DIR)/ljmemprof.so $(DESTDIR)$(PREFIX)/bin/ljmemprof \
	  $(DESTDIR)$(PREFIX)/include/ljmemprof.h $(DESTDIR)$(PREFIX)/lib/libljmemprof.a

bench: all
	bench/run

# The differential test of the agent's attribution with random seeds for a
# bounded time (tests/gen/README.md); every failing seed is printed with
# the command that reproduces it. The test suite runs fixed seeds
# (tests/agent-differential.t).
DIFFTEST_SECONDS ?= 300
.PHONY: difftest
difftest: all
	scripts/difftest.sh --seconds $(DIFFTEST_SECONDS) --quiet

# libFuzzer over the reader, the profile pass and the renderers (clang and
# Debian's libclang-rt-14-dev). Runs FUZZ_SECONDS and fails on any finding.
FUZZ_SECONDS ?= 60
FUZZ_CC      ?= clang
.PHONY: fuzz
fuzz: $(BUILD)/fuzz/report_fuzz
	scripts/fuzz-report.sh $(BUILD)/fuzz/report_fuzz $(FUZZ_SECONDS)

$(BUILD)/fuzz/report_fuzz: tests/fuzz/report_fuzz.c $(LIB_SRC) $(READER_HDR)
	@mkdir -p $(@D)
	$(FUZZ_CC) -g -O1 -fsanitize=fuzzer,address,undefined \
	  -fno-sanitize-recover=all -Isrc -o $@ tests/fuzz/report_fuzz.c \
	  $(LIB_SRC) -lz -lm

clean:
	rm -rf $(BUILD)/agent $(addprefix $(BUILD)/,$(LAYERS)) $(BUILD)/report $(BUILD)/cli $(BUILD)/tests \
	  $(BUILD)/ljmemprof $(BUILD)/ljmemprof.so $(BUILD)/libljmemprof.a

distclean:
	rm -rf $(BUILD)
