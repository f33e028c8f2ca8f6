# tools/bench.mk - `make bench`: decode and mount benchmarks (docs/performance.md).
# Included by the top Makefile.
#   BENCH_QUICK=1   smaller models, fewer runs (about a minute)
#   BENCH_DIR=DIR   where the generated models go (default: a directory in
#                   /dev/shm, else /tmp); removed afterwards
#   BENCH_ARGS=...  extra arguments for tools/bench.py (e.g. --runs 7)
#   GGML_SRC=DIR    a ggml or llama.cpp source tree: part 14 builds ggml's base
#                   library from it in the scratch directory and compares every
#                   type's decode with ggml's to_float (tools/bench_ggml.py)

BENCH_TOOLS := $(B)/bench/bench $(B)/bench/gen_model

.PHONY: bench bench-tools
bench-tools: $(BENCH_TOOLS)

$(B)/bench/%.o: tools/%.c
	@mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(B)/bench/bench $(B)/bench/gen_model: $(B)/bench/%: $(B)/bench/%.o $(B)/libwfprog.a $(B)/libweightfs.a
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $^ $(CJSON_LIBS) $(ZLIB_LIBS) $(CURL_LIBS) -lm -lpthread

bench: $(B)/weightfs $(B)/libweightfs.so $(BENCH_TOOLS)
	$(Q)$(PYTHON) tools/bench.py --weightfs $(B)/weightfs --tools $(B)/bench \
		--out $(B)/bench/results.json $(if $(filter 1,$(BENCH_QUICK)),--quick) \
		$(if $(BENCH_DIR),--dir $(BENCH_DIR)) $(if $(GGML_SRC),--ggml-src $(GGML_SRC)) $(BENCH_ARGS)

# The tools must keep compiling; running the benchmark is not part of check.
CHECK_TARGETS += bench-tools

-include $(wildcard $(B)/bench/*.d)
