# weightfs - plain GNU make.  `make`, `make check`, `make demo`, `make bench`,
# `make install PREFIX=/usr DESTDIR=...`.
#   DEBUG=1     -O0 -g3
#   SANITIZE=1  AddressSanitizer + UBSan, halting on the first report
#   V=1         echo commands

PREFIX  ?= /usr/local
BINDIR  ?= $(PREFIX)/bin
MANDIR  ?= $(PREFIX)/share/man
MIMEDIR ?= $(PREFIX)/share/mime
LIBDIR  ?= $(PREFIX)/lib
INCDIR  ?= $(PREFIX)/include
PCDIR   ?= $(LIBDIR)/pkgconfig
DATADIR ?= $(PREFIX)/share
BASHCOMPDIR ?= $(DATADIR)/bash-completion/completions
# The Python module goes where the python3 that will import it looks under
# PREFIX, as that interpreter says (tools/pydir.py): on Debian
# /usr/local/lib/python3.X/dist-packages for /usr/local and
# /usr/lib/python3/dist-packages for /usr.  Debian's own python3 unless
# INSTALL_PYTHON names another; asked only when (un)installing.
INSTALL_PYTHON ?= $(firstword $(wildcard /usr/bin/python3) python3)
PYDIR   ?= $(shell $(INSTALL_PYTHON) tools/pydir.py $(PREFIX))
# What install created (folders), for uninstall to remove (tools/instdirs.sh).
INSTLIST := $(DATADIR)/weightfs/installed-dirs
SOVER   := 0
LIBVER  := 0.1.0
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
# zlib's crc32 and adler32 for the previews' PNG files (the program only)
ZLIB_LIBS    := $(shell $(PKG_CONFIG) --libs zlib 2>/dev/null || echo -lz)
# libcrypto's SHA-256 and SHA-1 for verify and user.weightfs.sha256 (the
# program only: src/mount/wf_sha.h)
CRYPTO_LIBS  := $(shell $(PKG_CONFIG) --libs libcrypto 2>/dev/null || echo -lcrypto)
# libcurl for the remote sources (src/net/: hf://, https://): its headers
# here; the library is loaded on first use (src/net/wf_http.c says why)
CURL_CFLAGS  := $(shell $(PKG_CONFIG) --cflags libcurl 2>/dev/null)
CURL_LIBS    := -ldl
CHECK_CFLAGS := $(shell $(PKG_CONFIG) --cflags check 2>/dev/null)
CHECK_LIBS   := $(shell $(PKG_CONFIG) --libs check 2>/dev/null)

ALL_CFLAGS  = $(CSTD) $(OPT) $(WARN) $(SAN) -MMD -MP -Isrc $(CJSON_CFLAGS) $(CURL_CFLAGS) $(CFLAGS) $(CPPFLAGS)
# Library objects go into both libweightfs.so and libweightfs.a: position
# independent, and hidden unless weightfs.h marks them WEIGHTFS_API.
LIB_CFLAGS := -fPIC -fvisibility=hidden
ALL_LDFLAGS = $(SAN) $(LDFLAGS)

# Sources, layer by layer (docs/design.md): a file includes headers of its
# own folder and of the folders listed before it, never after (layers-check).
BASE_SRC  := src/base/wf_common.c src/base/wf_buf.c src/base/wf_hash.c src/base/wf_names.c src/base/wf_bus.c src/base/wf_pool.c \
             src/base/wf_unmap.c
NET_SRC   := src/net/wf_http.c src/net/wf_cache.c src/net/wf_remote.c src/net/wf_s3.c src/net/wf_s3_proc.c src/net/wf_source.c src/net/wf_offline.c src/net/wf_hubcache.c
CODEC_SRC := src/codec/wf_types.c src/codec/wf_decode.c src/codec/wf_decode_x86.c \
             src/codec/wf_iq_tables.c src/codec/wf_round.c src/codec/wf_quant.c src/codec/wf_quant_k.c \
             src/codec/wf_quant_x86.c
MODEL_SRC := src/model/wf_model.c src/model/wf_gguf.c src/model/wf_gguf_kv.c src/model/wf_st.c src/model/wf_meta.c src/model/wf_gguf_meta.c \
             src/model/wf_open.c src/model/wf_set.c \
             src/model/wf_set_parts.c src/model/wf_set_split.c src/model/wf_set_index.c \
             src/model/wf_set_folder.c src/model/wf_watch.c src/model/wf_json_scan.c \
             src/model/wf_maps.c src/model/wf_gguf_w.c \
             src/model/wf_spm.c src/model/wf_vocab.c src/model/wf_vocab_base.c src/model/wf_vocab_merges.c src/model/wf_vocab_sp.c src/model/wf_vocab_bpe.c src/model/wf_vocab_spm.c src/model/wf_vocab_tj.c \
             src/model/wf_hf_tok.c src/model/wf_hf_tok_kv.c src/model/wf_hf_tok_spm.c src/model/wf_tok.c
# the bridge between runtimes: one descriptor per architecture (docs/design.md)
ARCH_SRC  := src/arch/wf_arch.c src/arch/wf_arch_any.c src/arch/wf_arch_gguf.c src/arch/wf_arch_hf.c src/arch/wf_arch_put.c src/arch/wf_arch_quant.c \
             src/arch/wf_card.c src/arch/wf_arch_kv.c src/arch/wf_arch_reg.c \
             src/arch/wf_arch_llama.c src/arch/wf_arch_qwen.c src/arch/wf_arch_gemma.c src/arch/wf_arch_phi3.c \
             src/arch/wf_arch_olmo.c src/arch/wf_arch_deepseek2.c src/arch/wf_arch_glm4moe.c src/arch/wf_arch_gptoss.c
VIEW_SRC  := src/view/wf_view.c src/view/wf_live.c src/view/wf_prefetch.c src/view/wf_hfq.c src/view/wf_hfq_scheme.c src/view/wf_hfq_x86.c src/view/wf_hfq_detect.c src/view/wf_hfq_bnb8.c src/view/wf_hfq_mxfp4.c src/view/wf_stats.c src/view/wf_diff.c src/view/wf_gguf_file.c src/view/wf_hf_file.c
LIBAPI_SRC := src/lib/wf_api.c src/lib/wf_stack.c src/lib/wf_api_quant.c
MOUNT_SRC := src/mount/wf_tree.c src/mount/wf_gen.c src/mount/wf_st_stream.c src/mount/wf_tj.c src/mount/wf_summary.c src/mount/wf_attr.c \
             src/mount/wf_files.c src/mount/wf_mount.c \
             src/mount/wf_usage.c src/mount/wf_perm.c src/mount/wf_preview.c src/mount/wf_sha.c
FUSE_SRC  := src/fuse/main.c src/fuse/wf_fuse.c src/fuse/wf_mnt.c src/fuse/wf_limiter.c
CLI_SRC   := src/cli/cli.c src/cli/cli_read.c src/cli/cli_show.c src/cli/cli_convert.c src/cli/cli_out.c src/cli/cli_span.c src/cli/cli_look.c src/cli/cli_stats.c src/cli/cli_diff.c \
             src/cli/cli_verify.c src/cli/cli_vstate.c src/cli/cli_hub.c src/cli/cli_opt.c src/cli/cli_fetch.c

# The format library (libweightfs.so and .a): no FUSE, no mount tree.
LIB_SRC  := $(BASE_SRC) $(NET_SRC) $(CODEC_SRC) $(MODEL_SRC) $(ARCH_SRC) $(VIEW_SRC) $(LIBAPI_SRC)
LIB_OBJ  := $(LIB_SRC:src/%.c=$(B)/obj/%.o)
# What the program adds: the tree and its files, the commands, the FUSE
# front-end.  All of it but main() and the FUSE callbacks also goes into an
# archive of its own (libwfprog.a), which the unit tests link.
PROG_OBJ := $(MOUNT_SRC:src/%.c=$(B)/obj/%.o) $(B)/obj/fuse/wf_mnt.o $(B)/obj/fuse/wf_limiter.o $(B)/obj/cli/cli_out.o $(B)/obj/cli/cli_opt.o
BIN_OBJ  := $(B)/obj/fuse/main.o $(B)/obj/fuse/wf_fuse.o $(CLI_SRC:src/%.c=$(B)/obj/%.o)
ALL_SRC  := $(LIB_SRC) $(MOUNT_SRC) $(FUSE_SRC) $(CLI_SRC)
UNIT_SRC := $(wildcard tests/unit/check_*.c)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(B)/tests/%)

ifneq ($(V),1)
Q := @
endif

.PHONY: all lib check check-quick mount-smoke converter-digests layers-check unit-check mount-check api-check python-check readme-check install-check driver-check \
	demo install uninstall clean deb
.SECONDARY:
all: $(B)/weightfs lib
lib: $(B)/libweightfs.so

$(B)/obj/%.o: src/%.c
	@mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(LIB_OBJ): ALL_CFLAGS += $(LIB_CFLAGS)
# Objects built before the flags above (not position independent) cannot
# go into the shared library: a changed Makefile rebuilds them.
$(LIB_OBJ): Makefile

$(B)/obj/fuse/%.o: ALL_CFLAGS += $(FUSE_CFLAGS)
# Decoders must round exactly as ggml does: never fuse a*b+c.
$(B)/obj/codec/%.o: ALL_CFLAGS += -ffp-contract=off
# The encoders' packing loops and float16/bfloat16 rounding vectorize at
# -O3 (tools/bench_quant.py: up to 3x); no float operation changes: no
# fast-math, no contraction, so the bytes stay ggml's.
$(B)/obj/codec/wf_quant.o: OPT := $(if $(filter 1,$(DEBUG)),-O0 -g3,-O3 -g)
$(B)/obj/view/wf_hfq.o $(B)/obj/view/wf_hfq_x86.o $(B)/obj/view/wf_hfq_bnb8.o $(B)/obj/view/wf_hfq_mxfp4.o: ALL_CFLAGS += -ffp-contract=off

$(B)/libweightfs.a: $(LIB_OBJ)
	$(Q)rm -f $@ && ar rcs $@ $^

$(B)/libwfprog.a: $(PROG_OBJ)
	$(Q)rm -f $@ && ar rcs $@ $^

# The shared library exports weightfs.h and nothing else (api-check).
$(B)/libweightfs.so.$(SOVER): $(LIB_OBJ)
	$(Q)$(CC) $(ALL_LDFLAGS) -shared -Wl,-soname,libweightfs.so.$(SOVER) -Wl,-z,defs -o $@ $^ \
		$(CJSON_LIBS) $(CURL_LIBS) -lm -lpthread

$(B)/libweightfs.so: $(B)/libweightfs.so.$(SOVER)
	$(Q)ln -sf libweightfs.so.$(SOVER) $@

# weightfs.pc is made at install time: it names the PREFIX installed to.
PC_SED := -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@INCDIR@|$(INCDIR)|' \
	-e 's|@VERSION@|$(LIBVER)|'

# The program links the same library objects statically (libweightfs.a): it
# also uses the internals the shared library hides (wf_live, the model), and
# an installed binary then cannot meet a libweightfs.so of another version.
$(B)/weightfs: $(BIN_OBJ) $(B)/libwfprog.a $(B)/libweightfs.a
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(FUSE_LIBS) $(CJSON_LIBS) $(ZLIB_LIBS) $(CRYPTO_LIBS) $(CURL_LIBS) -lm -lpthread

$(B)/tests/%.o: tests/unit/%.c
	@mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) $(CHECK_CFLAGS) -c -o $@ $<

$(B)/tests/check_%: $(B)/tests/check_%.o $(B)/libwfprog.a $(B)/libweightfs.a
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(CJSON_LIBS) $(ZLIB_LIBS) $(CRYPTO_LIBS) $(CURL_LIBS) -lm -lpthread

# hftok_dump MODEL.gguf OUTDIR: the hf/ tokenizer files (tests/mount/t_hftok.py).
$(B)/hftok_dump: $(B)/tests/hftok_dump.o $(B)/libweightfs.a
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(CJSON_LIBS) $(CURL_LIBS) -lm -lpthread

# `make check` first installs what the tests need and is missing (apt, when
# root or passwordless sudo; otherwise it says what to install), then runs
# every suite.  tests/fuzz/fuzz.mk adds fuzz-check to CHECK_TARGETS.
# Each target's output is kept in $(B)/check-logs/TARGET.log; a failing run
# ends by naming the failing tests and their logs.
CHECK_TARGETS := layers-check driver-check unit-check mount-check api-check python-check readme-check install-check
check:
	$(Q)bash tools/deps.sh test
	$(Q)CHECK_LOGS=$(B)/check-logs bash tools/run_checks.sh "$(MAKE)" $(CHECK_TARGETS)

# The edit loop: the layer rule, the unit tests and a few mount groups (the
# oracle data of every type, errors, names, xattrs), in under two minutes;
# `make check` runs everything.
check-quick:
	$(Q)CHECK_LOGS=$(B)/check-logs bash tools/run_checks.sh "$(MAKE)" layers-check unit-check mount-smoke

mount-smoke: $(B)/weightfs
	$(Q)WF_TEST_ONLY=data,errors,naming,xattr bash tests/mount/run.sh $(B)/weightfs

# tools/run_checks.sh itself, with a fake make whose suites fail.
driver-check:
	$(Q)bash tests/check-driver/run.sh

unit-check: $(UNIT_BIN) $(B)/weightfs
	$(Q)$(PYTHON) tools/gen_iq_tables.py --check
	$(Q)$(PYTHON) tools/gen_malformed.py --check
	$(Q)$(PYTHON) tools/gen_known_blocks.py --check
	$(Q)fail=0; for t in $(UNIT_BIN); do $$t || fail=1; done; exit $$fail

# The layer rule, no include cycle, no function over 80 lines, every source
# named here, and who calls whom from the objects' symbols: only what
# design.md's "may call" column allows, no call cycle but the known ones
# (tools/check_layers.py; docs/design.md, Layers).
layers-check: $(B)/weightfs $(B)/libweightfs.so
	$(Q)$(PYTHON) tools/check_layers.py . $(B)/obj

mount-check: $(B)/weightfs $(B)/hftok_dump $(B)/libweightfs.so
	$(Q)bash tests/mount/run.sh $(B)/weightfs

# The shared library's exports are weightfs.h's functions and nothing else;
# docs/example.c builds against the header and library alone and runs.
api-check: $(B)/libweightfs.so $(B)/example $(B)/api_stored_view
	$(Q)bash tests/api/exports.sh $(B)/libweightfs.so.$(SOVER) src/lib/weightfs.h
	$(Q)$(B)/example tests/data/ggml-oracle/type_q4_K.gguf > /dev/null
	$(Q)$(B)/api_stored_view

# Public header and shared library only, as a program using them would.
$(B)/api_stored_view: tests/api/stored_view.c src/lib/weightfs.h $(B)/libweightfs.so
	$(Q)$(CC) $(CSTD) $(OPT) $(WARN) $(SAN) -Werror -isystem src/lib -o $@ $< -L$(B) -lweightfs -Wl,-rpath,'$$ORIGIN'

$(B)/example: docs/example.c src/lib/weightfs.h $(B)/libweightfs.so
	$(Q)$(CC) $(CSTD) $(OPT) $(WARN) $(SAN) -Werror -isystem src/lib -o $@ $< -L$(B) -lweightfs -Wl,-rpath,'$$ORIGIN'

python-check: $(B)/libweightfs.so
	$(Q)bash tests/python/run.sh $(B)/libweightfs.so.$(SOVER)

demo:
	$(Q)bash tools/demo.sh

# What llama.cpp's own convert_hf_to_gguf.py writes from the gguf group's test models, as
# digests the group compares model.gguf with (tests/data/converter; ~5 min: torch starts
# once per file). Rerun when the pinned node-llama-cpp or a test model changes.
converter-digests:
	$(Q)bash tests/clients/npm.sh >/dev/null
	$(Q)WEIGHTFS_NPM=$${WEIGHTFS_NPM:-$$HOME/.cache/weightfs-npm} $(PYTHON) tools/converter_digests.py

# Every shell block of the README (and of docs/python.md) runs as written
# against the demo model (tests/readme/run.sh); they use build/, whatever
# SANITIZE says.
readme-check:
	$(Q)$(MAKE) --no-print-directory SANITIZE=0 all
	$(Q)bash tests/readme/run.sh README.md docs/python.md

# make install and uninstall, into DESTDIRs and (as root) the system, from a
# clean clone of what is committed (tests/install/run.sh), always a normal
# build: what is installed is never the sanitizer build of SANITIZE=1.
install-check:
	$(Q)env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL SANITIZE=0 DEBUG=0 bash tests/install/run.sh

# The mime types of -o suffix's and -o npy's files (packaging/weightfs-mime.xml).
# A staged install (DESTDIR, packages) leaves the database to the package's
# trigger, and the loader's cache to the package's ldconfig trigger; a
# direct one updates both (the library is then found without ldconfig by
# hand, docs/install.md).
install: $(B)/weightfs $(B)/libweightfs.so
	$(Q)test -n "$(PYDIR)" || { echo "install: $(INSTALL_PYTHON) does not say where modules go: give PYDIR=" >&2; exit 1; }
	$(Q)DESTDIR="$(DESTDIR)" bash tools/instdirs.sh make $(INSTLIST) $(BINDIR) $(MANDIR)/man1 \
		$(MIMEDIR)/packages $(LIBDIR) $(INCDIR) $(PCDIR) $(PYDIR)/weightfs $(BASHCOMPDIR) $(DATADIR)/weightfs
	install -m 0755 $(B)/weightfs $(DESTDIR)$(BINDIR)/weightfs
	install -m 0644 docs/weightfs.1 $(DESTDIR)$(MANDIR)/man1/weightfs.1
	install -m 0644 $(B)/libweightfs.so.$(SOVER) $(DESTDIR)$(LIBDIR)/libweightfs.so.$(SOVER)
	ln -sf libweightfs.so.$(SOVER) $(DESTDIR)$(LIBDIR)/libweightfs.so
	install -m 0644 src/lib/weightfs.h $(DESTDIR)$(INCDIR)/weightfs.h
	sed $(PC_SED) weightfs.pc.in > $(DESTDIR)$(PCDIR)/weightfs.pc && chmod 0644 $(DESTDIR)$(PCDIR)/weightfs.pc
	install -m 0644 python/weightfs/__init__.py python/weightfs/__main__.py python/weightfs/py.typed $(DESTDIR)$(PYDIR)/weightfs/
	install -m 0644 packaging/weightfs-mime.xml $(DESTDIR)$(MIMEDIR)/packages/weightfs.xml
	install -m 0644 packaging/weightfs.bash-completion $(DESTDIR)$(BASHCOMPDIR)/weightfs
	$(Q)if [ -z "$(DESTDIR)" ]; then \
		if command -v update-mime-database >/dev/null 2>&1; then update-mime-database $(MIMEDIR); fi; \
		PATH=$$PATH:/sbin:/usr/sbin ldconfig; \
		case "$(LIBDIR)" in /lib | /usr/lib | /lib64 | /usr/lib64) ;; *) \
			PATH=$$PATH:/sbin:/usr/sbin ldconfig -p | grep -qF '$(LIBDIR)/libweightfs.so.$(SOVER)' || \
			echo "note: the dynamic loader does not search $(LIBDIR): add it to /etc/ld.so.conf.d/ and run ldconfig";; \
		esac; \
	fi

# Removes what install installed, and the folders it created once they are
# empty; the mime database install generated goes too when no other
# package is left in it.
MIME_DB := aliases generic-icons globs globs2 icons magic mime.cache subclasses treemagic types version XMLnamespaces
# Every type packaging/weightfs-mime.xml declares: the files update-mime-database
# made of them go when the last package description does.
MIME_TYPES = $(shell sed -n 's/.*<mime-type type="\([^"]*\)".*/\1/p' packaging/weightfs-mime.xml)

uninstall:
	$(Q)test -n "$(PYDIR)" || { echo "uninstall: $(INSTALL_PYTHON) does not say where modules go: give PYDIR=" >&2; exit 1; }
	rm -f $(DESTDIR)$(BINDIR)/weightfs $(DESTDIR)$(MANDIR)/man1/weightfs.1 \
		$(DESTDIR)$(MIMEDIR)/packages/weightfs.xml \
		$(DESTDIR)$(LIBDIR)/libweightfs.so.$(SOVER) $(DESTDIR)$(LIBDIR)/libweightfs.so \
		$(DESTDIR)$(INCDIR)/weightfs.h $(DESTDIR)$(PCDIR)/weightfs.pc $(DESTDIR)$(BASHCOMPDIR)/weightfs
	rm -rf $(DESTDIR)$(PYDIR)/weightfs
	$(Q)if [ -z "$(DESTDIR)" ] && [ -d $(MIMEDIR)/packages ]; then \
		if [ -z "$$(ls -A $(MIMEDIR)/packages)" ]; then \
			rm -f $(addprefix $(MIMEDIR)/,$(MIME_DB)) $(MIME_TYPES:%=$(MIMEDIR)/%.xml); \
			rmdir $(MIMEDIR)/application 2>/dev/null || true; \
		elif command -v update-mime-database >/dev/null 2>&1; then update-mime-database $(MIMEDIR); fi; \
	fi
	$(Q)DESTDIR="$(DESTDIR)" bash tools/instdirs.sh remove $(INSTLIST)
	$(Q)if [ -z "$(DESTDIR)" ]; then PATH=$$PATH:/sbin:/usr/sbin ldconfig; fi

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

clean:
	rm -rf build

-include $(wildcard tests/fuzz/fuzz.mk tools/bench.mk)
-include $(wildcard $(B)/obj/*/*.d $(B)/tests/*.d)
