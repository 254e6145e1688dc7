# trackd — AVAssetReader for Linux. `make help` lists the targets.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := build

# The Swift toolchain lives in /opt/swift on the project's machines; use it when swift is not on PATH.
ifeq ($(shell command -v swift),)
export PATH := /opt/swift/usr/bin:$(PATH)
endif
SWIFT ?= swift

# Debian 12 packages. build: headers for the C modules, dpkg-dev for `make deb` (dpkg-shlibdeps); runtime: the GStreamer elements the worker
# uses; test: oracles and tools the tests and scripts call (ffprobe/ffmpeg, systemd-analyze,
# systemd-socket-activate, python3; python3-numpy, pip, setuptools and wheel for the Python client's tests).
BUILD_DEPS   := libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev libsystemd-dev libseccomp-dev libmd-dev libcairo2-dev pkg-config dpkg-dev
RUNTIME_DEPS := gstreamer1.0-plugins-base gstreamer1.0-plugins-good gstreamer1.0-plugins-bad \
                gstreamer1.0-plugins-ugly gstreamer1.0-libav gstreamer1.0-tools
TEST_DEPS    := ffmpeg systemd python3 python3-numpy python3-pip python3-setuptools python3-wheel
DEPS         := $(BUILD_DEPS) $(RUNTIME_DEPS) $(TEST_DEPS)

# Debian's Python (the one python3-numpy is installed for), not whichever python3 is first on PATH.
PYTHON ?= /usr/bin/python3

RELEASE_DIR := $(CURDIR)/.build/release
DEBUG_DIR   := $(CURDIR)/.build/debug
# install and deb: a release build with the Swift runtime linked in (--static-swift-stdlib), in its own scratch
# dir, so the installed binaries need only Debian's libraries, not the toolchain in /opt/swift.
DIST_SCRATCH := $(CURDIR)/.build/dist
DIST_DIR     := $(DIST_SCRATCH)/release

PREFIX  ?= /usr/local
DESTDIR ?=
VERSION ?= 0.1.0
comma := ,
empty :=
space := $(empty) $(empty)

.PHONY: help deps build build-debug build-dist install deb package-check test test-python verify-units fuzz-protocol fuzz-media fuzz fuzz-smoke run serve bench clean

help:
	@echo "make deps          install missing Debian packages (apt-get; prints the sudo command when not root)"
	@echo "make build         release build: .build/release/{trackd,trackctl}"
	@echo "make build-debug   debug build: .build/debug/{trackd,trackctl}"
	@echo "make install       release build (Swift runtime linked in), install into \$$(DESTDIR)\$$(PREFIX) (PREFIX=/usr/local):"
	@echo "                   bin/, lib/systemd/system (ExecStart=PREFIX/bin/trackd), lib/sysusers.d, lib/tmpfiles.d, share/doc"
	@echo "make deb           the same build as a Debian package: build/trackd_\$$(VERSION)_ARCH.deb (dpkg-deb; VERSION=0.1.0)"
	@echo "make package-check install and deb checks with the debug build (no install on this machine; part of make test)"
	@echo "make test          deps, unit-file check, debug build with tests, package check, swift test (with short fuzz runs),"
	@echo "                   then test-python"
	@echo "make test-python   the Python client (clients/python): pip install into a temp dir, unittest"
	@echo "make fuzz-protocol protocol mutation fuzzer against a real trackd (FUZZ_SECONDS=300, FUZZ_SEED=n)"
	@echo "make fuzz-media    mutation fuzzer over media through real daemons (FUZZ_SECONDS=300, FUZZ_SEED=…);"
	@echo "                   crashing/hanging inputs go to .build/fuzz/; fails on a supervisor crash or a hang"
	@echo "make fuzz          libFuzzer on one parser: TARGET=wire|settings|indexcache|mp4|planner SECONDS=600;"
	@echo "                   corpus in .build/fuzz-corpus/TARGET, crashes in .build/fuzz-corpus/TARGET-crashes/"
	@echo "make fuzz-smoke    every libFuzzer target for FUZZ_SMOKE_SECONDS (5) each; fails on a crash (part of make test)"
	@echo "make run           deps, release build, demo against a private trackd (FILE=clip.mp4 optional)"
	@echo "make serve         release build, trackd in the foreground (SOCKET=path optional)"
	@echo "make bench         release build, benchmark against gst-launch/ffmpeg -> docs/BENCHMARKS.md"
	@echo "make clean         remove .build/ and build/"

deps:
	@missing=(); \
	for p in $(DEPS); do \
	  [[ "$$(dpkg-query -W -f='$${Status}' "$$p" 2>/dev/null)" == "install ok installed" ]] || missing+=("$$p"); \
	done; \
	if (( $${#missing[@]} == 0 )); then exit 0; fi; \
	echo "deps: missing Debian packages: $${missing[*]}"; \
	if (( EUID == 0 )); then \
	  apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$${missing[@]}"; \
	else \
	  echo "deps: not root; install them with:"; \
	  echo "  sudo apt-get update && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $${missing[*]}"; \
	  exit 1; \
	fi

build: deps
	$(SWIFT) build -c release

build-debug: deps
	$(SWIFT) build

verify-units:
	@scripts/verify-units.sh

build-dist: deps
	$(SWIFT) build -c release --static-swift-stdlib --scratch-path $(DIST_SCRATCH)

install: build-dist
	BUILD_DIR=$(DIST_DIR) PREFIX=$(PREFIX) DESTDIR=$(DESTDIR) scripts/install.sh

deb: build-dist
	@BUILD_DIR=$(DIST_DIR) OUT_DIR=$(CURDIR)/build VERSION=$(VERSION) \
	  RUNTIME_DEPENDS="$(subst $(space),$(comma)$(space),$(strip $(RUNTIME_DEPS)))" scripts/deb.sh

# make install / make deb's layout, units, sysusers.d/tmpfiles.d entries and maintainer scripts, with the debug
# build (scripts/package-check.sh: temp dirs only).
package-check:
	@BUILD_DIR=$(DEBUG_DIR) RUNTIME_DEPENDS="$(subst $(space),$(comma)$(space),$(strip $(RUNTIME_DEPS)))" scripts/package-check.sh

# Tests find trackd and trackctl through TRACKD_BUILD_DIR.
test: deps verify-units
	$(SWIFT) build --build-tests
	@$(MAKE) --no-print-directory package-check
	TRACKD_BUILD_DIR=$(DEBUG_DIR) $(SWIFT) test --skip-build
	@$(MAKE) --no-print-directory fuzz-smoke
	@$(MAKE) --no-print-directory test-python

# The Python client: installed offline with pip into a temp dir from a copy of clients/python (what
# `pip install clients/python` does, without touching the tree), then its unittest tests against a trackd
# from .build/debug (built by `make test` or `make build-debug`).
test-python:
	@tmp=$$(mktemp -d "$${TMPDIR:-/tmp}/trackd-python.XXXXXX"); trap 'rm -rf "$$tmp"' EXIT; \
	cp -r clients/python "$$tmp/src"; \
	$(PYTHON) -m pip install --quiet --root-user-action=ignore --no-build-isolation --no-deps --no-index \
	  --target "$$tmp/site" "$$tmp/src"; \
	cd clients/python/tests; \
	PYTHONPATH="$$tmp/site" PYTHONDONTWRITEBYTECODE=1 TRACKD_BUILD_DIR=$(DEBUG_DIR) \
	  $(PYTHON) -m unittest discover -s . -t . -v

# The fuzzer is an integration test; `make test` runs it for a few seconds, this for FUZZ_SECONDS (default 300).
# It prints its seed (FUZZ_SEED=n reproduces a run) and the outcomes; worker-crash inputs go to .build/fuzz/.
FUZZ_SECONDS ?= 300
fuzz-protocol: deps
	$(SWIFT) build --build-tests
	FUZZ_SECONDS=$(FUZZ_SECONDS) $(if $(FUZZ_SEED),FUZZ_SEED=$(FUZZ_SEED)) TRACKD_BUILD_DIR=$(DEBUG_DIR) \
	  $(SWIFT) test --skip-build --filter ProtocolFuzzTests

# The media fuzzer (Tests/IntegrationTests/MediaFuzzTests.swift), time-bounded; FUZZ_SEED reproduces a run.
FUZZ_SECONDS ?= 300
fuzz-media: deps
	$(SWIFT) build --build-tests
	FUZZ_SECONDS=$(FUZZ_SECONDS) $(if $(FUZZ_SEED),FUZZ_SEED=$(FUZZ_SEED)) FUZZ_DIR=$(CURDIR)/.build/fuzz \
	  TRACKD_BUILD_DIR=$(DEBUG_DIR) $(SWIFT) test --skip-build --filter MediaFuzzTests

# Coverage-guided fuzzing (libFuzzer, Fuzz/*.swift, scripts/fuzz.sh): the wire decoder, the settings decoder, the
# index-cache wire, the MP4/MOV sample-table reader and the frame planner, built with -sanitize=fuzzer,address.
TARGET ?= wire
SECONDS ?= 600
FUZZ_SMOKE_SECONDS ?= 5
fuzz:
	@scripts/fuzz.sh run $(TARGET) $(SECONDS)

fuzz-smoke:
	@scripts/fuzz.sh smoke $(FUZZ_SMOKE_SECONDS)

run: build
	@BUILD_DIR=$(RELEASE_DIR) FILE="$(FILE)" scripts/run-demo.sh

serve: build
	$(RELEASE_DIR)/trackd $(if $(SOCKET),--socket "$(SOCKET)")

bench: build
	@BUILD_DIR=$(RELEASE_DIR) scripts/bench.sh

clean:
	rm -rf .build build
