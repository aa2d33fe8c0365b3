# kiln's front door. `make demo` and `make test` do all set-up on a fresh Debian 12
# machine with the CUDA toolkit: missing packages, configure, build.
BUILD ?= build
CUDA_HOME ?= /usr/local/cuda
MESON_OPTIONS ?= -Dtoolkit=$(CUDA_HOME)
DEB_PACKAGES := meson ninja-build g++ pkg-config python3 python3-numpy libfmt-dev \
  nlohmann-json3-dev doctest-dev libcli11-dev libxxhash-dev clang libclang-rt-14-dev \
  libonnx-dev libprotobuf-dev libonnx-testdata python3-onnx
KILN := $(BUILD)/generator/kiln

.PHONY: all deps configure build tools demo test test-all bench bundle clean format

all: build

deps:
	@CUDA_HOME=$(CUDA_HOME) tools/deps.sh $(DEB_PACKAGES)

configure: deps
	@test -f $(BUILD)/build.ninja || meson setup $(BUILD) $(MESON_OPTIONS)

build: configure
	@ninja -C $(BUILD)

# Test-only tools from PyPI into the build: the SASS disassembler the census test reads
# (the Debian toolkit has none) and onnxruntime, the reference of the torchvision
# conformance set. Optional: without PyPI those tests say they are skipped.
tools: configure
	@python3 tools/fetch_pypi.py $(BUILD)/tools nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm || \
	  echo "(no PyPI: the SASS census test will be skipped)"
	@/usr/bin/python3 tools/fetch_pypi.py $(BUILD)/tools/python onnxruntime || \
	  echo "(no PyPI: the onnxruntime conformance test will be skipped)"

# Everything CI runs: all suites but `gpu` (which needs a device).
test: build tools
	meson test -C $(BUILD) --no-suite gpu --print-errorlogs --num-processes 2

# With a GPU present, the gpu suite too.
test-all: build tools
	meson test -C $(BUILD) --print-errorlogs --num-processes 2

# Only what the demo runs: the kiln CLI and the runtime libraries `kiln build` links into
# programs (not the tests: `make test` builds those).
DEMO_TARGETS := generator/kiln runtime/standalone/libkiln_standalone.a

demo: configure
	@echo "== building kiln ($(DEMO_TARGETS)); ninja counts the steps"
	@ninja -C $(BUILD) $(DEMO_TARGETS)
	@echo
	@tools/demo.sh $(KILN)

# A relocatable tarball for a GPU machine with a driver but no build toolchain.
bundle: build
	@tools/bundle.sh $(BUILD) $(BUILD)/bundle

format:
	git ls-files '*.cpp' '*.hpp' '*.cuh' '*.cu' | grep -v '^generated/' | xargs clang-format -i

clean:
	rm -rf $(BUILD)
