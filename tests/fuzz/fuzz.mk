# tests/fuzz/fuzz.mk - libFuzzer targets (included by the top Makefile).
#
#   make fuzz                 build build/fuzz/fuzz_* with clang and run each
#                             for FUZZ_TIME seconds (or FUZZ_RUNS executions)
#   make fuzz FUZZ_TARGETS=st FUZZ_RUNS=10000000
#   make fuzz-check           a short run of each (part of `make check`);
#                             skipped when clang cannot build a fuzzer
#
# The library is compiled again for the fuzzers, with clang and
# -fsanitize=fuzzer-no-link,address,undefined, into build/fuzz/obj/; the
# normal objects are untouched.  Each run works on a copy of the seed corpus
# (build/fuzz/corpus-<target>/, kept between `make fuzz` runs so they build
# on each other; fuzz-check starts from the seeds every time), so
# tests/fuzz/corpus/ only changes by hand.  Crash, leak and timeout inputs
# are written to build/fuzz/artifacts/ and the run fails.  See
# tests/fuzz/README.md.

FUZZ_CC      ?= clang
FUZZ_B       := build/fuzz
FUZZ_TARGETS ?= gguf st read tree hfq vocab hftok hfview gguf_retype
FUZZ_TIME    ?= 60
FUZZ_RUNS    ?=
# fuzz-check: whichever limit comes first
FUZZ_CHECK_TIME ?= 10
FUZZ_CHECK_RUNS ?= 200000
# extra libFuzzer flags, e.g. FUZZ_FLAGS=-jobs=2
FUZZ_FLAGS   ?=

# Seeds beyond tests/fuzz/corpus/<target>/: the malformed corpus of the
# unit tests (small files each refused for one reason).
FUZZ_SEEDS_gguf := $(wildcard tests/malformed/gguf_*)
FUZZ_SEEDS_st   := $(wildcard tests/malformed/st_*)

FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_CFLAGS  := $(CSTD) -O2 -g $(WARN) $(FUZZ_SAN) -Isrc $(CJSON_CFLAGS)
FUZZ_LIB_OBJ := $(LIB_SRC:src/%.c=$(FUZZ_B)/obj/%.o) $(MOUNT_SRC:src/%.c=$(FUZZ_B)/obj/%.o)
FUZZ_BINS    := $(FUZZ_TARGETS:%=$(FUZZ_B)/fuzz_%)
# Limits for every run: what one input may cost.  An input that makes the
# library allocate more than malloc_limit_mb at once, or take longer than
# timeout seconds, is a bug.
FUZZ_LIMITS  := -timeout=5 -rss_limit_mb=2048 -malloc_limit_mb=512 -print_final_stats=1

.PHONY: fuzz fuzz-build fuzz-check
.PHONY: $(FUZZ_TARGETS:%=fuzz-run-%) $(FUZZ_TARGETS:%=fuzz-check-run-%)

CHECK_TARGETS += fuzz-check

fuzz-build: $(FUZZ_BINS)

# Objects named in an explicit rule, so that a missing one is rebuilt (the
# top Makefile's .SECONDARY would otherwise let it stay missing); a change of
# flags here rebuilds them too.
$(FUZZ_BINS): $(FUZZ_LIB_OBJ)
$(FUZZ_LIB_OBJ): tests/fuzz/fuzz.mk

$(FUZZ_B)/obj/%.o: src/%.c
	@mkdir -p $(@D)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c -o $@ $<

# as in the top Makefile: decoders round exactly as ggml does
$(FUZZ_B)/obj/codec/%.o: FUZZ_CFLAGS += -ffp-contract=off

$(FUZZ_B)/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz_common.h tests/fuzz/fuzz_made.h $(FUZZ_LIB_OBJ)
	@mkdir -p $(@D)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_LIB_OBJ) $(CJSON_LIBS) $(ZLIB_LIBS) $(CRYPTO_LIBS) $(CURL_LIBS) -lm

# $(call fuzz_run,target,corpus dir,limit flags)
define fuzz_run
	@mkdir -p $(2) $(FUZZ_B)/artifacts
	$(Q)cp tests/fuzz/corpus/$(1)/* $(FUZZ_SEEDS_$(1)) $(2)/
	@echo "  FUZZ    $(1) ($(3))"
	$(Q)if ASAN_OPTIONS=$${ASAN_OPTIONS:-detect_leaks=1} UBSAN_OPTIONS=$${UBSAN_OPTIONS:-print_stacktrace=1} \
		$(FUZZ_B)/fuzz_$(1) $(FUZZ_LIMITS) $(3) $(FUZZ_FLAGS) \
		$(if $(wildcard tests/fuzz/$(1).dict),-dict=tests/fuzz/$(1).dict) \
		-artifact_prefix=$(FUZZ_B)/artifacts/$(1)- $(2) >$(FUZZ_B)/$(1).log 2>&1; then \
		grep -E '^#[0-9]+.*(DONE|cov:)' $(FUZZ_B)/$(1).log | tail -n 1 | sed 's/^/  $(1): /'; \
		grep -E '^stat::(number_of_executed_units|average_exec_per_sec)' $(FUZZ_B)/$(1).log | sed 's/^/  $(1): /'; \
	else \
		tail -n 60 $(FUZZ_B)/$(1).log; \
		echo "fuzz: $(1) FAILED; full log $(FUZZ_B)/$(1).log, input in $(FUZZ_B)/artifacts/"; \
		exit 1; \
	fi
endef

fuzz: $(FUZZ_TARGETS:%=fuzz-run-%)

$(FUZZ_TARGETS:%=fuzz-run-%): fuzz-run-%: $(FUZZ_B)/fuzz_%
	$(call fuzz_run,$*,$(FUZZ_B)/corpus-$*,$(if $(FUZZ_RUNS),-runs=$(FUZZ_RUNS),-max_total_time=$(FUZZ_TIME)))

# fuzz-check probes for a clang that links libFuzzer programs; without
# one it skips (fails under CI, which installs clang, like mount-check).
FUZZ_PROBE = mkdir -p $(FUZZ_B) && command -v $(FUZZ_CC) >/dev/null 2>&1 && \
	printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n);\nint LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { (void)d; (void)n; return 0; }\n' \
	>$(FUZZ_B)/probe.c && \
	$(FUZZ_CC) -fsanitize=fuzzer,address,undefined -o $(FUZZ_B)/probe $(FUZZ_B)/probe.c >/dev/null 2>&1

fuzz-check:
	$(Q)if $(FUZZ_PROBE); then \
		$(MAKE) --no-print-directory fuzz-check-runs; \
	elif [ -n "$${CI+set}" ]; then \
		echo "fuzz-check: FAIL (CI is set): $(FUZZ_CC) cannot build libFuzzer targets" >&2; exit 1; \
	else \
		echo "fuzz-check: skipped: $(FUZZ_CC) cannot build libFuzzer targets (install clang and libclang-rt-dev)"; \
	fi

.PHONY: fuzz-check-runs
fuzz-check-runs: $(FUZZ_TARGETS:%=fuzz-check-run-%)

$(FUZZ_TARGETS:%=fuzz-check-run-%): fuzz-check-run-%: $(FUZZ_B)/fuzz_%
	@rm -rf $(FUZZ_B)/check-corpus-$*
	$(call fuzz_run,$*,$(FUZZ_B)/check-corpus-$*,-max_total_time=$(FUZZ_CHECK_TIME) -runs=$(FUZZ_CHECK_RUNS))

-include $(wildcard $(FUZZ_B)/obj/*/*.d)
