# The two set-up commands of the README: `make demo` and `make test`. Both install what they need.
BUILD ?= build
JOBS ?= $(shell nproc)
export CCACHE_BASEDIR := $(CURDIR)

.PHONY: setup build demo test unit differential bench clean

setup:
	@bash scripts/setup.sh

$(BUILD)/build.ninja: CMakeLists.txt
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release

build: setup $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

demo: build
	@bash scripts/demo.sh $(BUILD)

unit: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 600

differential: build
	TUG_BUILD_DIR=$(abspath $(BUILD)) .venv/bin/python -m pytest -q tests/differential tests/python

test: unit differential

bench: build
	@bash scripts/bench.sh $(BUILD)

clean:
	rm -rf $(BUILD)
