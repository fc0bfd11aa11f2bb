# ljmemprof: build, test, install.
#
#   make            build the agent (Lua module + static lib), the CLI and
#                   the test programs (no clang needed: make test builds
#                   the sanitizer hosts)
#   make example    build, profile examples/example.lua, print the report
#   make test       build and run the whole test suite (TAP, via prove);
#                   TESTS="tests/a.t tests/b.t" runs only those
#   make install    PREFIX=/usr/local DESTDIR= (module where luajit finds it)
#   make bench      benchmarks (not a test; prints measured ratios)
#   make difftest   the differential test's long run: random programs, JIT
#                   off vs on, for DIFFTEST_SECONDS (default 300)
#
# Which LuaJIT (docs/DESIGN.md, "Flavours"): one build directory per source.
#
#   FLAVOUR=luajit   Debian's luajit: its source package (the installed
#                    version) in build/luajit-src; builds into build/
#   FLAVOUR=luajit2  OpenResty's branch, Debian's luajit2: its source
#                    package in build/luajit2/luajit-src, its interpreter and
#                    library unpacked (dpkg -x, never installed) under
#                    build/luajit2/root; builds into build/luajit2/
#   LUAJIT_SRC=DIR   any LuaJIT 2.1 tree; builds into build/src/<DIR's path>
#                    and tests with DIR/src/luajit when it is built
#
# FLAVOUR defaults to the installed library's (luajit2 when only
# libluajit2-5.1-2 is installed, else luajit). BUILD=DIR overrides the
# build directory. Source packages come through a private apt
# configuration under build/apt; the system's is never touched.

PREFIX     ?= /usr/local
DESTDIR    ?=
CC         ?= cc
CFLAGS     ?= -O2 -g
WARN       := -Wall -Wextra -Wno-unused-parameter
APTDIR     := build/apt
MULTIARCH  := $(shell $(CC) -print-multiarch 2>/dev/null)

ifneq ($(origin LUAJIT_SRC),undefined)
  FLAVOUR  := src
  BUILD    ?= build/src/$(subst /,_,$(patsubst /%,%,$(abspath $(LUAJIT_SRC))))
else
  ifeq ($(origin FLAVOUR),undefined)
    FLAVOUR := $(shell scripts/flavour.sh detect)
  endif
  ifeq ($(FLAVOUR),luajit)
    BUILD  ?= build
  else ifeq ($(FLAVOUR),luajit2)
    BUILD  ?= build/luajit2
  else
    $(error FLAVOUR must be luajit or luajit2 (or give LUAJIT_SRC=DIR), not '$(FLAVOUR)')
  endif
  LUAJIT_SRC := $(BUILD)/luajit-src
endif
ABS_BUILD  := $(abspath $(BUILD))

# The interpreter the tests and the example run (LUAJIT), found in PATH:
# Debian's luajit is the system's; another flavour's is $(BUILD)/bin/luajit,
# a wrapper around the unpacked (or built) binary that sets its library and
# jit.* module paths. The C test hosts link the same library (LUAJIT_LIBS).
ifeq ($(FLAVOUR),luajit)
  LUAJIT_BIN  :=
  LUAJIT_LIBS ?= -lluajit-5.1
else ifeq ($(FLAVOUR),luajit2)
  L2ROOT      := $(ABS_BUILD)/root
  LUAJIT_BIN  := $(BUILD)/bin/luajit
  LUAJIT_LIBDEP := $(BUILD)/root/.debs/luajit2.unpacked
  LUAJIT_LIBS ?= $(L2ROOT)/usr/lib/$(MULTIARCH)/libluajit-5.1.so.2 \
                 -Wl,-rpath,$(L2ROOT)/usr/lib/$(MULTIARCH)
else
  LUAJIT_BIN  := $(BUILD)/bin/luajit
  LUAJIT_LIBS ?= $(if $(wildcard $(LUAJIT_SRC)/src/libluajit.so),$(abspath \
                 $(LUAJIT_SRC)/src/libluajit.so) -Wl$(,)-rpath$(,)$(abspath \
                 $(LUAJIT_SRC)/src),-lluajit-5.1)
endif
, := ,
TEST_PATH  := $(if $(LUAJIT_BIN),$(ABS_BUILD)/bin:)$(PATH)
LUAJIT     ?= luajit

# Debian packages the build and the tests need, per flavour; make deps
# installs them (root) without ever removing a package (scripts/deps.sh).
# Debian's neovim, wrk and python3-lupa link libluajit-5.1-2: their tests
# belong to the luajit flavour. nginx, its Lua module and lua-resty-core
# are for tests/agent-nginx.t: nginx is installed (it conflicts with
# nothing), the rest unpacked under build/luajit2/root with luajit2.
DEB_COMMON := dpkg-dev lua-cjson gcc make perl clang libclang-rt-14-dev \
              lua-lpeg zlib1g-dev golang-go python3 chromium curl nginx pkg-config \
              lua-busted heaptrack nodejs
DEB_PKGS_luajit  := luajit libluajit-5.1-dev neovim wrk python3-lupa
DEB_PKGS_luajit2 :=
DEB_PKGS_src     :=
DEB_PKGS   := $(DEB_COMMON) $(DEB_PKGS_$(FLAVOUR))
DEB_UNPACK := luajit2 libluajit2-5.1-2 libluajit2-5.1-common \
              libnginx-mod-http-lua libnginx-mod-http-ndk lua-resty-core lua-resty-lrucache

AGENT_SRC := src/agent/mp_arm.c src/agent/mp_hook.c src/agent/mp_native.c src/agent/mp_stack.c src/agent/mp_node.c src/agent/mp_traceline.c src/agent/mp_sample.c src/agent/mp_seen.c src/agent/mp_sym.c src/agent/mp_frame.c src/agent/mp_sink.c src/agent/mp_error.c src/agent/mp_options.c src/agent/mp_stream.c src/agent/mp_proc.c src/util/mp_hash.c \
             src/agent/mp_check.c src/agent/mp_names.c src/agent/ljmp_api.c \
             src/agent/lib_ljmemprof.c src/agent/mp_heap_walk.c
AGENT_OBJ := $(patsubst src/%.c,$(BUILD)/agent/%.o,$(AGENT_SRC))
AGENT_HDR := $(wildcard src/agent/*.h src/util/*.h src/format/*.h) include/ljmemprof.h

# The reader side, layer by layer (docs/DESIGN.md): each folder's files
# are picked up by wildcard, so adding a renderer or an analysis is adding
# a file.
LAYERS     := format util reader analysis render
LIB_SRC    := $(filter-out src/util/mp_fault.c,$(foreach d,$(LAYERS),$(wildcard src/$(d)/*.c)))
CLI_SRC    := $(wildcard src/cli/*.c)
READER_HDR := $(foreach d,$(LAYERS),$(wildcard src/$(d)/*.h))
CLI_HDR    := $(wildcard src/cli/*.h)
READER_OBJ := $(patsubst src/%.c,$(BUILD)/%.o,$(LIB_SRC))

TEST_C     := $(wildcard tests/c/*.c)
TEST_BIN   := $(patsubst tests/c/%.c,$(BUILD)/tests/%,$(TEST_C))
# Lua C modules of the tests (tests/agent-native.t).
TEST_CMOD  := $(patsubst tests/cmod/%.c,$(BUILD)/tests/cmod/%.so,$(wildcard tests/cmod/*.c))

.PHONY: all deps example test install uninstall bench clean distclean
all: $(BUILD)/ljmemprof.so $(BUILD)/libljmemprof_preload.so $(BUILD)/libljmemprof.a $(BUILD)/ljmemprof $(TEST_BIN) $(TEST_CMOD) \
     $(BUILD)/wrong-layout/ljmemprof.so $(BUILD)/stackcheck/ljmemprof.so \
     $(LUAJIT_BIN) $(BUILD)/ljmemprof.1
# The sanitizer builds of the tests (clang): made by make test, not by
# make all, so that building needs no clang.
SAN_BIN := $(BUILD)/tsan/agent_host $(BUILD)/asan/agent_host $(BUILD)/tsan/native_threads \
           $(BUILD)/fault/ljmemprof.so $(BUILD)/fault/ljmemprof

# Install missing Debian packages when root (never removing one), else say
# exactly what to run; and, under build/npm, the npm packages of the
# DevTools test (scripts/npm-deps.sh).
deps:
	@scripts/deps.sh $(DEB_PKGS)
	@scripts/npm-deps.sh build/npm

# The LuaJIT source of a flavour (fetched once; `make distclean` forgets it).
ifneq ($(FLAVOUR),src)
$(LUAJIT_SRC)/src/lj_obj.h:
	@$(MAKE) --no-print-directory deps
	scripts/fetch-luajit-src.sh $(FLAVOUR) $(LUAJIT_SRC) $(APTDIR) >/dev/null
else
$(LUAJIT_SRC)/src/lj_obj.h:
	@echo "LUAJIT_SRC=$(LUAJIT_SRC) is not a LuaJIT 2.1 source tree (no src/lj_obj.h)" >&2; exit 1
endif

# Another flavour's binary packages, unpacked under $(BUILD)/root, at the
# version of its source package; and the wrapper the tests run as luajit.
ifeq ($(FLAVOUR),luajit2)
$(BUILD)/root/.debs/luajit2.unpacked: $(LUAJIT_SRC)/src/lj_obj.h
	v=$$(sed -n '1s/^[^ ]* (\([^)]*\)).*/\1/p' $(LUAJIT_SRC)/debian/changelog); \
	scripts/unpack-debs.sh $(BUILD)/root $(APTDIR) luajit2=$$v libluajit2-5.1-2=$$v \
	  libluajit2-5.1-common=$$v
	touch $@
$(LUAJIT_BIN): $(BUILD)/root/.debs/luajit2.unpacked
	@mkdir -p $(@D)
	printf '%s\n' '#!/bin/sh' '# The luajit2 interpreter unpacked under build/ (made by make).' \
	  'root=$(L2ROOT)' \
	  'LD_LIBRARY_PATH=$$root/usr/lib/$(MULTIARCH)$${LD_LIBRARY_PATH:+:$$LD_LIBRARY_PATH}' \
	  'LUA_PATH="$$root/usr/share/luajit-2.1.0-beta3/?.lua;$${LUA_PATH:-;}"' \
	  'export LD_LIBRARY_PATH LUA_PATH' 'exec "$$root/usr/bin/luajit" "$$@"' > $@.tmp
	chmod +x $@.tmp && mv $@.tmp $@
# nginx's Lua module for tests/agent-nginx.t (nginx itself is installed).
.PHONY: nginx-lua
nginx-lua: $(LUAJIT_BIN)
	scripts/unpack-debs.sh $(BUILD)/root $(APTDIR) libnginx-mod-http-lua \
	  libnginx-mod-http-ndk lua-resty-core lua-resty-lrucache
else ifeq ($(FLAVOUR),src)
$(LUAJIT_BIN): $(LUAJIT_SRC)/src/lj_obj.h
	@mkdir -p $(@D)
	printf '%s\n' '#!/bin/sh' '# The interpreter of LUAJIT_SRC (made by make).' \
	  'src=$(abspath $(LUAJIT_SRC))/src' \
	  '[ -x "$$src/luajit" ] || { echo "$$src/luajit: not built" >&2; exit 127; }' \
	  'LD_LIBRARY_PATH=$$src$${LD_LIBRARY_PATH:+:$$LD_LIBRARY_PATH}' \
	  'LUA_PATH="$$src/?.lua;$${LUA_PATH:-;}"' \
	  'export LD_LIBRARY_PATH LUA_PATH' 'exec "$$src/luajit" "$$@"' > $@.tmp
	chmod +x $@.tmp && mv $@.tmp $@
endif

# What this build is for, in the load-time check's messages (mp_check.c).
$(BUILD)/gen/mp_flavour.h: $(LUAJIT_SRC)/src/lj_obj.h scripts/flavour.sh
	@mkdir -p $(@D)
	d=$$(scripts/flavour.sh describe $(LUAJIT_SRC)) && \
	printf '/* Generated by make: the LuaJIT this build is for. */\n#define MP_BUILT_FOR "%s"\n' \
	  "$$d" > $@

# The names of the fast functions by ffid, read from the library sources
# of this LuaJIT the way its buildvm numbers them (mp_names.c).
$(BUILD)/gen/mp_ffnames.h: $(LUAJIT_SRC)/src/lj_obj.h scripts/gen-ffnames.pl
	@mkdir -p $(@D)
	scripts/gen-ffnames.pl $(LUAJIT_SRC) > $@.tmp && mv $@.tmp $@

# LUAJIT_XCFLAGS: the options the LuaJIT was built with that change its
# layout (e.g. -DLUAJIT_DISABLE_GC64); see docs/DESIGN.md.
AGENT_CPPFLAGS := -D_GNU_SOURCE -DLJMP_BUILD -Iinclude -Isrc -I$(BUILD)/gen \
                  -I$(LUAJIT_SRC)/src $(LUAJIT_XCFLAGS)
AGENT_DEPS := $(AGENT_HDR) $(LUAJIT_SRC)/src/lj_obj.h $(BUILD)/gen/mp_flavour.h \
              $(BUILD)/gen/mp_ffnames.h

# Objects depend on the headers they include (-MMD: the compiler lists
# them in a .d file beside the object, read back below), and on the
# generated header and LuaJIT's source being there. An object without its
# .d file (built before -MMD, or its .d lost) depends on every header of
# its side, so that it is never left stale.
DEPFLAGS   := -MMD -MP
AGENT_GEN  := $(LUAJIT_SRC)/src/lj_obj.h $(BUILD)/gen/mp_flavour.h $(BUILD)/gen/mp_ffnames.h
.SECONDEXPANSION:
no_deps     = $(if $(wildcard $(@:.o=.d)),,$(1))

$(BUILD)/agent/%.o: src/%.c $(AGENT_GEN) $$(call no_deps,$(AGENT_HDR))
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) $(DEPFLAGS) -fPIC -fvisibility=hidden $(AGENT_CPPFLAGS) -c $< -o $@

# The module exports luaopen_ljmemprof and the ljmp_* API only.
$(BUILD)/ljmemprof.so: $(AGENT_OBJ)
	$(CC) -shared -o $@ $(AGENT_OBJ) -ldl -lpthread

# Native memory's LD_PRELOAD mode (run --native=preload): the malloc
# family, forwarding to the agent's wrappers while it records.
$(BUILD)/libljmemprof_preload.so: src/preload/ljmp_preload.c src/agent/mp_preload.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) -fPIC -shared -fvisibility=hidden -Isrc -o $@ $<

# A module deliberately built for another layout (32-bit GC refs), so the
# tests can check that the load-time check refuses it instead of crashing.
$(BUILD)/wrong-layout/ljmemprof.so: $(AGENT_SRC) $(AGENT_DEPS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -w -fPIC -shared -fvisibility=hidden $(AGENT_CPPFLAGS) \
	  -DLUAJIT_DISABLE_GC64 -o $@ $(AGENT_SRC) -ldl -lpthread

# The stack recorder checked on every event: what its caches and quick
# paths find is found again the long way, and a difference aborts
# (tests/agent-stacks-check.t).
$(BUILD)/stackcheck/ljmemprof.so: $(AGENT_SRC) $(AGENT_DEPS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) -fPIC -shared -fvisibility=hidden $(AGENT_CPPFLAGS) \
	  -DMP_STACK_CHECK -o $@ $(AGENT_SRC) -ldl -lpthread

# The multi-threaded host of tests/agent-host.t, agent included, under
# ThreadSanitizer and under AddressSanitizer + UBSan (clang, Debian's
# libclang-rt-14-dev).
SAN_CC ?= clang
$(BUILD)/tsan/agent_host: tests/c/agent_host.c $(AGENT_SRC) $(AGENT_DEPS) $(LUAJIT_LIBDEP)
	@mkdir -p $(@D)
	$(SAN_CC) -g -O1 -fsanitize=thread $(AGENT_CPPFLAGS) \
	  -o $@ tests/c/agent_host.c $(AGENT_SRC) $(LUAJIT_LIBS) -ldl -lpthread
$(BUILD)/tsan/native_threads: tests/c/native_threads.c $(AGENT_SRC) $(AGENT_DEPS) $(LUAJIT_LIBDEP)
	@mkdir -p $(@D)
	$(SAN_CC) -g -O1 -fsanitize=thread $(AGENT_CPPFLAGS) \
	  -o $@ tests/c/native_threads.c $(AGENT_SRC) $(LUAJIT_LIBS) -ldl -lpthread
$(BUILD)/asan/agent_host: tests/c/agent_host.c $(AGENT_SRC) $(AGENT_DEPS) $(LUAJIT_LIBDEP)
	@mkdir -p $(@D)
	$(SAN_CC) -g -O1 -fsanitize=address,undefined -fno-sanitize-recover=all \
	  $(AGENT_CPPFLAGS) -o $@ tests/c/agent_host.c $(AGENT_SRC) $(LUAJIT_LIBS) -ldl -lpthread

# The fault build of the fault loops (tests/agent-fault.t,
# tests/report-fault.t): the module and the command under ASan + UBSan,
# their malloc family routed through a counter that fails the Nth call
# (src/util/mp_fault.h says how). mp_native.c is compiled without it:
# its real.malloc() and the wrappers are the C library's. UBSan's null
# check is off: LuaJIT's macros take a field's address through a NULL
# reference (tabref() of a table without metatable), and a real NULL
# dereference is ASan's SEGV report anyway.
FAULT_CFLAGS := -g -O1 -fsanitize=address,undefined -fno-sanitize=null \
                -fno-sanitize-recover=all
FAULT_INC    := -DMP_FAULT -include src/util/mp_fault.h
$(BUILD)/fault/mp_native.o: src/agent/mp_native.c $(AGENT_DEPS)
	@mkdir -p $(@D)
	$(SAN_CC) $(FAULT_CFLAGS) -fPIC -fvisibility=hidden $(AGENT_CPPFLAGS) -c $< -o $@
$(BUILD)/fault/ljmemprof.so: $(BUILD)/fault/mp_native.o $(AGENT_SRC) src/util/mp_fault.c \
                             src/util/mp_fault.h $(AGENT_DEPS)
	@mkdir -p $(@D)
	$(SAN_CC) $(FAULT_CFLAGS) $(FAULT_INC) -fPIC -shared -fvisibility=hidden $(AGENT_CPPFLAGS) \
	  -o $@ $(filter-out src/agent/mp_native.c,$(AGENT_SRC)) src/util/mp_fault.c \
	  $(BUILD)/fault/mp_native.o -ldl -lpthread
$(BUILD)/fault/ljmemprof: $(CLI_SRC) $(LIB_SRC) src/util/mp_fault.c src/util/mp_fault.h \
                          $(CLI_HDR) $(READER_HDR) include/ljmemprof.h \
                          $(BUILD)/gen/page_assets.h $(BUILD)/gen/snap_assets.h \
                          $(BUILD)/gen/run_start.h
	@mkdir -p $(@D)
	$(SAN_CC) $(FAULT_CFLAGS) $(FAULT_INC) -Iinclude -Isrc -I$(BUILD)/gen -o $@ $(CLI_SRC) $(LIB_SRC) \
	  src/util/mp_fault.c -lz -lm

$(BUILD)/libljmemprof.a: $(AGENT_OBJ)
	rm -f $@ && ar rcs $@ $(AGENT_OBJ)

# The page, its style and script, and run's Lua start chunk are files of their
# own, made C strings here (scripts/gen-embed.pl); the objects that include
# them depend on them below (before their first build) and through -MMD.
PAGE_FILES := src/render/page.html src/render/page.css src/render/page.js
$(BUILD)/gen/page_assets.h: $(PAGE_FILES) scripts/gen-embed.pl
	@mkdir -p $(@D)
	scripts/gen-embed.pl mp_page_html=src/render/page.html mp_page_css=src/render/page.css \
	  mp_page_js=src/render/page.js > $@.tmp && mv $@.tmp $@
$(BUILD)/gen/run_start.h: src/cli/run_start.lua scripts/gen-embed.pl
	@mkdir -p $(@D)
	scripts/gen-embed.pl --macros mp_run_start=src/cli/run_start.lua > $@.tmp && mv $@.tmp $@
$(BUILD)/render/render_html.o: $(BUILD)/gen/page_assets.h
$(BUILD)/gen/snap_assets.h: src/render/snap_page.html src/render/snap_page.js scripts/gen-embed.pl
	@mkdir -p $(@D)
	scripts/gen-embed.pl mp_snap_html=src/render/snap_page.html \
	  mp_snap_js=src/render/snap_page.js > $@.tmp && mv $@.tmp $@
$(BUILD)/render/render_snaphtml.o: $(BUILD)/gen/snap_assets.h

$(BUILD)/%.o: src/%.c $$(call no_deps,$(READER_HDR))
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) $(DEPFLAGS) -Iinclude -Isrc -I$(BUILD)/gen -c $< -o $@

-include $(AGENT_OBJ:.o=.d) $(READER_OBJ:.o=.d)

$(BUILD)/ljmemprof: $(READER_OBJ) $(CLI_SRC) $(CLI_HDR) $(READER_HDR) include/ljmemprof.h \
                   $(BUILD)/gen/run_start.h
	$(CC) $(CFLAGS) $(WARN) -Iinclude -Isrc -I$(BUILD)/gen -o $@ $(CLI_SRC) $(READER_OBJ) -lz -lm

$(BUILD)/tests/%: tests/c/%.c $(wildcard tests/c/*.h) $(BUILD)/libljmemprof.a $(READER_OBJ) $(READER_HDR) \
                  $(LUAJIT_LIBDEP)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) -Iinclude -Isrc -I$(LUAJIT_SRC)/src -o $@ $< \
	  $(READER_OBJ) $(BUILD)/libljmemprof.a $(LUAJIT_LIBS) -lz -lm -ldl -lpthread

$(BUILD)/tests/cmod/%.so: tests/cmod/%.c $(LUAJIT_LIBDEP)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) -fPIC -shared -I$(LUAJIT_SRC)/src -o $@ $< -lpthread

# Only what the example runs: the module and the command.
example: $(BUILD)/ljmemprof.so $(BUILD)/ljmemprof $(LUAJIT_BIN)
	@PATH="$(TEST_PATH)" BUILD=$(BUILD) scripts/example.sh

# The suite runs against this build: BUILD, FLAVOUR and LUAJIT tell the
# tests which (tests/lib/tap.sh, tests/lib/mp_test.lua); another flavour's
# interpreter is first in PATH as luajit.
# TESTS="tests/a.t tests/b.t" runs part of the suite (default: all of it).
TESTS      ?= tests/
test: all $(SAN_BIN) $(if $(filter luajit2,$(FLAVOUR)),nginx-lua)
	PATH="$(TEST_PATH)" BUILD=$(BUILD) FLAVOUR=$(FLAVOUR) LUAJIT_INC=$(abspath $(LUAJIT_SRC))/src \
	  LUAJIT_LIBS="$(LUAJIT_LIBS)" LUAJIT=$(if $(LUAJIT_BIN),$(ABS_BUILD)/bin/luajit,luajit) prove --exec tests/lib/timed.sh $(TESTS)

# Installed like a Lua module and a C library: the module where this
# flavour's LuaJIT looks for C modules (LUA_CMOD, scripts/cmod-dir.sh:
# PREFIX=/usr gives Debian's /usr/lib/<multiarch>/lua/5.1), the command and
# its man page, the header, the static library and a pkg-config file for
# embedders (pkg-config --cflags --libs ljmemprof).
LIBDIR     ?= $(PREFIX)/lib
MANDIR     ?= $(PREFIX)/share/man
VERSION    := $(shell sed -n 's/^\#define LJMP_VERSION[^"]*"\([0-9][0-9.]*\)".*/\1/p' include/ljmemprof.h)
CMOD_DIR    = $(or $(LUA_CMOD),$$(scripts/cmod-dir.sh $(PREFIX) $(or $(LUAJIT_BIN),luajit)))
# Lua modules (the busted helper, ljmemprof.busted): LuaJIT's default
# path has $(PREFIX)/share/lua/5.1 for /usr/local and /usr alike.
LMOD_DIR    = $(or $(LUA_LMOD),$(PREFIX)/share/lua/5.1)

$(BUILD)/ljmemprof.1: $(BUILD)/ljmemprof scripts/manpage.sh
	scripts/manpage.sh $(BUILD)/ljmemprof > $@.tmp && mv $@.tmp $@

install: all
	cmod=$(CMOD_DIR) && \
	install -d $(DESTDIR)$$cmod $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/include \
	  $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(MANDIR)/man1 && \
	install -m 0755 $(BUILD)/ljmemprof.so $(DESTDIR)$$cmod/ljmemprof.so
	install -d $(DESTDIR)$(LMOD_DIR)/ljmemprof
	install -m 0644 lua/ljmemprof/busted.lua $(DESTDIR)$(LMOD_DIR)/ljmemprof/busted.lua
	install -m 0755 $(BUILD)/ljmemprof $(DESTDIR)$(PREFIX)/bin/ljmemprof
	install -m 0644 $(BUILD)/ljmemprof.1 $(DESTDIR)$(MANDIR)/man1/ljmemprof.1
	install -m 0644 include/ljmemprof.h $(DESTDIR)$(PREFIX)/include/ljmemprof.h
	install -m 0644 $(BUILD)/libljmemprof.a $(DESTDIR)$(LIBDIR)/libljmemprof.a
	install -m 0755 $(BUILD)/libljmemprof_preload.so $(DESTDIR)$(LIBDIR)/libljmemprof_preload.so
	printf '%s\n' 'prefix=$(PREFIX)' 'libdir=$(patsubst $(PREFIX)/%,$${prefix}/%,$(LIBDIR))' \
	  'includedir=$${prefix}/include' '' \
	  'Name: ljmemprof' 'Description: Memory profiler for LuaJIT: the agent, for programs that embed LuaJIT' \
	  'Version: $(VERSION)' 'Requires: luajit' \
	  'Libs: -L$${libdir} -lljmemprof -ldl -lpthread' \
	  'Cflags: -I$${includedir}' > $(DESTDIR)$(LIBDIR)/pkgconfig/ljmemprof.pc

uninstall:
	cmod=$(CMOD_DIR) && rm -f $(DESTDIR)$$cmod/ljmemprof.so
	rm -f $(DESTDIR)$(LMOD_DIR)/ljmemprof/busted.lua
	-rmdir $(DESTDIR)$(LMOD_DIR)/ljmemprof 2>/dev/null
	rm -f $(DESTDIR)$(PREFIX)/bin/ljmemprof $(DESTDIR)$(MANDIR)/man1/ljmemprof.1 \
	  $(DESTDIR)$(PREFIX)/include/ljmemprof.h $(DESTDIR)$(LIBDIR)/libljmemprof.a \
	  $(DESTDIR)$(LIBDIR)/libljmemprof_preload.so \
	  $(DESTDIR)$(LIBDIR)/pkgconfig/ljmemprof.pc

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

$(BUILD)/fuzz/report_fuzz: tests/fuzz/report_fuzz.c $(LIB_SRC) $(READER_HDR) $(BUILD)/gen/page_assets.h \
                           $(BUILD)/gen/snap_assets.h
	@mkdir -p $(@D)
	$(FUZZ_CC) -g -O1 -fsanitize=fuzzer,address,undefined \
	  -fno-sanitize-recover=all -Isrc -I$(BUILD)/gen -o $@ tests/fuzz/report_fuzz.c \
	  $(LIB_SRC) -lz -lm

clean:
	rm -rf $(BUILD)/agent $(addprefix $(BUILD)/,$(LAYERS)) $(BUILD)/report $(BUILD)/cli $(BUILD)/tests \
	  $(BUILD)/ljmemprof $(BUILD)/ljmemprof.so $(BUILD)/libljmemprof.a $(BUILD)/ljmemprof.1 \
	  $(BUILD)/gen $(BUILD)/wrong-layout $(BUILD)/stackcheck $(BUILD)/tsan $(BUILD)/asan \
	  $(BUILD)/fault

distclean:
	rm -rf $(BUILD)
