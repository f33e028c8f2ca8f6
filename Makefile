# weightfs - plain GNU make.  `make`, `make check`, `make demo`, `make bench`,
# `make install PREFIX=/usr DESTDIR=...`.
#   DEBUG=1     -O0 -g3
#   SANITIZE=1  AddressSanitizer + UBSan, halting on the first report
#   V=1         echo commands

PREFIX  ?= /usr/local
BINDIR  ?= $(PREFIX)/bin
MANDIR  ?= $(PREFIX)/share/man
CC      ?= cc
PKG_CONFIG ?= pkg-config
PYTHON  ?= python3

ifeq ($(SANITIZE),1)
B := build/san
else
B := build
endif

WARN    := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
           -Wwrite-strings -Wpointer-arith -Wformat=2 -Wvla
CSTD    := -std=c11 -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64
ifeq ($(DEBUG),1)
OPT     := -O0 -g3
else
OPT     := -O2 -g
endif
ifeq ($(SANITIZE),1)
SAN     := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
endif

FUSE_CFLAGS  := $(shell $(PKG_CONFIG) --cflags fuse3 2>/dev/null)
FUSE_LIBS    := $(shell $(PKG_CONFIG) --libs fuse3 2>/dev/null)
CJSON_CFLAGS := $(shell $(PKG_CONFIG) --cflags libcjson 2>/dev/null)
CJSON_LIBS   := $(shell $(PKG_CONFIG) --libs libcjson 2>/dev/null)
CHECK_CFLAGS := $(shell $(PKG_CONFIG) --cflags check 2>/dev/null)
CHECK_LIBS   := $(shell $(PKG_CONFIG) --libs check 2>/dev/null)

ALL_CFLAGS  = $(CSTD) $(OPT) $(WARN) $(SAN) -MMD -MP -Isrc $(CJSON_CFLAGS) $(CFLAGS) $(CPPFLAGS)
ALL_LDFLAGS = $(SAN) $(LDFLAGS)

# The format library: no FUSE in it.
LIB_SRC  := $(filter-out src/main.c src/wf_fuse.c src/cli.c,$(wildcard src/*.c))
LIB_OBJ  := $(LIB_SRC:src/%.c=$(B)/obj/%.o)
BIN_OBJ  := $(B)/obj/main.o $(B)/obj/wf_fuse.o $(B)/obj/cli.o
UNIT_SRC := $(wildcard tests/unit/check_*.c)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(B)/tests/%)

ifneq ($(V),1)
Q := @
endif

.PHONY: all check unit-check mount-check demo install uninstall clean deb
.SECONDARY:
all: $(B)/weightfs

$(B)/obj/%.o: src/%.c
	@mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(B)/obj/main.o $(B)/obj/wf_fuse.o: ALL_CFLAGS += $(FUSE_CFLAGS)
# Decoders must round exactly as ggml does: never fuse a*b+c.
$(B)/obj/wf_decode.o $(B)/obj/wf_decode_x86.o: ALL_CFLAGS += -ffp-contract=off

$(B)/libweightfs.a: $(LIB_OBJ)
	$(Q)rm -f $@ && ar rcs $@ $^

$(B)/weightfs: $(BIN_OBJ) $(B)/libweightfs.a
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(FUSE_LIBS) $(CJSON_LIBS) -lm -lpthread

$(B)/tests/%.o: tests/unit/%.c
	@mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) $(CHECK_CFLAGS) -c -o $@ $<

$(B)/tests/check_%: $(B)/tests/check_%.o $(B)/libweightfs.a
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(CJSON_LIBS) -lm -lpthread

# `make check` first installs what the tests need and is missing (apt, when
# root or passwordless sudo; otherwise it says what to install), then runs
# every suite.  tests/fuzz/fuzz.mk adds fuzz-check to CHECK_TARGETS.
CHECK_TARGETS := unit-check mount-check
check:
	$(Q)bash tools/deps.sh test
	$(Q)$(MAKE) --no-print-directory $(CHECK_TARGETS)

unit-check: $(UNIT_BIN) $(B)/weightfs
	$(Q)$(PYTHON) tools/gen_iq_tables.py --check
	$(Q)$(PYTHON) tools/gen_malformed.py --check
	$(Q)$(PYTHON) tools/gen_known_blocks.py --check
	$(Q)fail=0; for t in $(UNIT_BIN); do $$t || fail=1; done; exit $$fail

mount-check: $(B)/weightfs
	$(Q)bash tests/mount/run.sh $(B)/weightfs

demo:
	$(Q)bash tools/demo.sh

install: $(B)/weightfs
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1
	install -m 0755 $(B)/weightfs $(DESTDIR)$(BINDIR)/weightfs
	install -m 0644 docs/weightfs.1 $(DESTDIR)$(MANDIR)/man1/weightfs.1

# A .deb in build/deb/, from packaging/debian (see packaging/README.md).  The
# package is built from a copy of the tree in build/deb/src, so neither the
# clean step of the package build nor its ../ outputs touch anything else.
DEB_DIR := build/deb
deb:
	$(Q)bash tools/deps.sh deb
	rm -rf $(DEB_DIR) && mkdir -p $(DEB_DIR)/src
	tar --exclude=./build --exclude=./.git --exclude=./debian --exclude=./mnt -cf - . | \
		tar -xf - -C $(DEB_DIR)/src
	cp -r packaging/debian $(DEB_DIR)/src/debian
	cd $(DEB_DIR)/src && dpkg-buildpackage -us -uc -b
	rm -rf $(DEB_DIR)/src
	@ls $(DEB_DIR)/*.deb

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/weightfs $(DESTDIR)$(MANDIR)/man1/weightfs.1

clean:
	rm -rf build

-include $(wildcard tests/fuzz/fuzz.mk tools/bench.mk)
-include $(wildcard $(B)/obj/*.d $(B)/tests/*.d)
