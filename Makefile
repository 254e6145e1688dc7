# trackd — AVAssetReader for Linux. `make help` lists the targets.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := build

# The Swift toolchain lives in /opt/swift on the project's machines; use it when swift is not on PATH.
ifeq ($(shell command -v swift),)
export PATH := /opt/swift/usr/bin:$(PATH)
endif
SWIFT ?= swift

# Debian 12 packages. build: headers for the C modules, dpkg-dev for `make deb` (dpkg-shlibdeps), pip, setuptools and
# wheel to install the Python client (clients/python) into the package and the tests' temp dirs; runtime: the
# GStreamer elements the worker uses; python: what the packaged Python client needs (Debian's python3 and
# python3-numpy; with RUNTIME_DEPS, the package's Depends); test: oracles and tools the tests and scripts call
# (ffprobe/ffmpeg, systemd-analyze, systemd-socket-activate; python3-venv for the Python tests' venv, .build/venv-test).
BUILD_DEPS   := libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev libswscale-dev liborc-0.4-dev libsystemd-dev \
                libseccomp-dev libmd-dev libcairo2-dev libjpeg62-turbo-dev libvorbis-dev pkg-config dpkg-dev \
                python3-pip python3-setuptools python3-wheel
RUNTIME_DEPS := gstreamer1.0-plugins-base gstreamer1.0-plugins-good gstreamer1.0-plugins-bad \
                gstreamer1.0-plugins-ugly gstreamer1.0-libav gstreamer1.0-tools
PYTHON_DEPS  := python3 python3-numpy
TEST_DEPS    := ffmpeg systemd python3-venv
DEPS         := $(BUILD_DEPS) $(RUNTIME_DEPS) $(PYTHON_DEPS) $(TEST_DEPS)

# Debian's Python (the one python3-numpy is installed for), not whichever python3 is first on PATH.
PYTHON ?= /usr/bin/python3

RELEASE_DIR := $(CURDIR)/.build/release
DEBUG_DIR   := $(CURDIR)/.build/debug
# install and deb: a release build with the Swift runtime linked in (--static-swift-stdlib), in its own scratch
# dir, so the installed binaries need only Debian's libraries, not the toolchain in /opt/swift.
DIST_SCRATCH := $(CURDIR)/.build/dist
DIST_DIR     := $(DIST_SCRATCH)/release

LOAD_TARGET ?= test
PREFIX  ?= /usr/local
DESTDIR ?=
# trackd's version: Sources/Protocol/TrackdVersion.swift's `trackdVersion`, the one place it is written (the
# binaries are built with it). make deb names and stamps the package with it, and make test checks that the
# installed trackd, trackctl and Python client (whose __version__ must equal it) all report it.
VERSION := $(shell sed -n 's/^public let trackdVersion = "\([^"]*\)"$$/\1/p' Sources/Protocol/TrackdVersion.swift)
ifeq ($(origin VERSION),command line)
$(error VERSION is trackdVersion in Sources/Protocol/TrackdVersion.swift, which the binaries are built with: edit that line rather than passing VERSION=$(VERSION))
endif
comma := ,
empty :=
space := $(empty) $(empty)

# SwiftPM reads .pc files itself and drops every flag but -I/-L/-l/… with a "warning: prohibited flag(s): -pthread"
# on each build and test run: GLib's gmodule-no-export-2.0.pc (gstreamer-1.0 requires it) has -pthread in Cflags and
# Libs. `make pkgconfig` (run before every SwiftPM command here) writes copies of such files without it into
# build/pkgconfig, first in PKG_CONFIG_PATH for all make runs; scripts/pkgconfig-without-pthread.sh says why this is
# safe and which files. By hand: make pkgconfig, then PKG_CONFIG_PATH=$$PWD/build/pkgconfig swift build.
PKGCONFIG_DIR := $(CURDIR)/build/pkgconfig
export PKG_CONFIG_PATH := $(subst $(space),:,$(strip $(PKGCONFIG_DIR) $(filter-out $(PKGCONFIG_DIR),$(subst :, ,$(PKG_CONFIG_PATH)))))
# Every build goes through scripts/no-warnings.sh: it fails when the build prints a warning (the rule is none).
SWIFT_BUILD = scripts/no-warnings.sh "make $@" -- $(SWIFT) build

.PHONY: help deps pkgconfig build build-debug build-dist install deb package-check check check-docs code-shape no-warnings-gate duplicates test test-under-load test-sanitize test-python test-torch venv-test verify-units fuzz-protocol fuzz-media fuzz fuzz-smoke soak run serve bench bench-venv bench-pipelines clean

help:
	@echo "make deps          install missing Debian packages (apt-get; prints the sudo command when not root)"
	@echo "make pkgconfig     build/pkgconfig: the .pc files SwiftPM would warn about, without -pthread (every build runs it)"
	@echo "make build         release build: .build/release/{trackd,trackctl}"
	@echo "make build-debug   debug build: .build/debug/{trackd,trackctl}"
	@echo "make install       release build (Swift runtime linked in), install into \$$(DESTDIR)\$$(PREFIX) (PREFIX=/usr/local):"
	@echo "                   bin/, lib/systemd/system (ExecStart=PREFIX/bin/trackd), lib/sysusers.d, lib/tmpfiles.d, share/doc"
	@echo "make deb           the same build as a Debian package, with the Python client: build/trackd_$(VERSION)_ARCH.deb"
	@echo "                   (dpkg-deb; the version is trackdVersion in Sources/Protocol/TrackdVersion.swift)"
	@echo "make package-check make deb, then the install and package checks and the package at work: unpacked into a temp"
	@echo "                   root, its trackd, trackctl and Python client run against each other (part of make test)"
	@echo "make check         the checks that need no build (part of make test): check-docs, code-shape, no-warnings-gate,"
	@echo "                   duplicates"
	@echo "make check-docs    links in every .md resolve, the make targets they name exist, PROTOCOL.md's message"
	@echo "                   types are the code's (scripts/check-docs.py, after its self-test on broken inputs)"
	@echo "make code-shape    no Swift, C or Python source file over 500 lines, no function over 60 (scripts/code-shape.sh)"
	@echo "make no-warnings-gate  the self-test of scripts/no-warnings.sh, which fails every build that prints a warning"
	@echo "make duplicates    the duplicates tool's rows for the whole tree, when it is installed (never fails)"
	@echo "make test          deps, check, unit-file check, debug build with tests, package check, swift test (with short fuzz runs),"
	@echo "                   then test-python"
	@echo "make test-under-load  make test with every core kept busy by busy loops (LOAD_PROCS=n, default nproc, at least 2;"
	@echo "                   LOAD_TARGET=… runs another target under the same load); stops the load however it ends"
	@echo "make test-sanitize ThreadSanitizer, then AddressSanitizer builds (.build/tsan, .build/asan) and the unit and"
	@echo "                   integration suites against them; fails on any report (.build/sanitize-logs/); about 2 hours"
	@echo "                   from scratch on 2 loaded CPUs; not part of make test (SANITIZERS=thread|address, SANITIZE_FILTER=regex)"
	@echo "make test-python   the Python client (clients/python): cached test venv (.build/venv-test: ray, PyYAML from"
	@echo "                   PyPI), pip install into a temp dir, unittest (README examples, Ray on a local cluster)"
	@echo "make test-torch    torch (several GB from PyPI) into the test venv, then the PyTorch tests (not in make test)"
	@echo "make fuzz-protocol protocol mutation fuzzer against a real trackd (FUZZ_SECONDS=300, FUZZ_SEED=n)"
	@echo "make fuzz-media    mutation fuzzer over media through real daemons (FUZZ_SECONDS=300, FUZZ_SEED=…);"
	@echo "                   crashing/hanging inputs go to .build/fuzz/; fails on a supervisor crash or a hang"
	@echo "make fuzz          libFuzzer on one parser (Fuzz/README.md): SECONDS=600 TARGET=wire|settings|indexcache|mp4|"
	@echo "                   planner|h264|vorbis|mkvtail|mpeg4vop|ogg; corpus in .build/fuzz-corpus/TARGET, crashes in"
	@echo "                   .build/fuzz-corpus/TARGET-crashes/"
	@echo "make fuzz-smoke    every libFuzzer target for FUZZ_SMOKE_SECONDS (5) each; fails on a crash (part of make test)"
	@echo "make soak          one daemon, one uid: a burst of 200 closing connections, SOAK_KILLED (1000) clients killed mid-read, 16 threads of checked reads and"
	@echo "                   Status for SOAK_SECONDS (300), worker SIGKILL/SIGSEGV, SIGTERM mid-read; prints the figures, fails on"
	@echo "                   a wrong byte, a refusal, a leak, wrong counters or an unclean stop (make test runs 8 s, 8 clients)"
	@echo "make run           deps, release build, demo against a private trackd (FILE=clip.mp4 optional)"
	@echo "make serve         release build, trackd in the foreground (SOCKET=path optional)"
	@echo "make bench         release build, bench venv, benchmark against gst-launch/ffmpeg and PyAV/OpenCV/decord/TorchCodec"
	@echo "                   -> docs/BENCHMARKS.md (full runs only; quick check: RUNS=1 BENCH_SECONDS=2 make bench;"
	@echo "                   PIPELINES=1: make bench-pipelines too)"
	@echo "make bench-venv    make bench's Python venv (.build/venv-bench, from PyPI; BENCH_TORCH=auto|pypi|no)"
	@echo "make bench-pipelines  Ray Data and DataLoader frames/s against read_videos/TorchCodec (QUICK=1: a check)"
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

pkgconfig: deps
	@scripts/pkgconfig-without-pthread.sh $(PKGCONFIG_DIR)

build: deps pkgconfig
	$(SWIFT_BUILD) -c release

build-debug: deps pkgconfig
	$(SWIFT_BUILD)

verify-units:
	@scripts/verify-units.sh

# Only the two products: `swift build` alone would build every target, and Tests/TestSupport (a regular target the
# test targets share) imports Testing, which a --static-swift-stdlib build does not have.
# Linked by the toolchain's lld, not the driver's default gold: the static Foundation it links in
# (libFoundationEssentials.a, createTemporaryFile) refers to mktemp(3), which glibc marks with a link-time warning
# (a .gnu.warning.mktemp section) that gold and GNU ld print on every such link; lld does not act on those sections.
# trackd's own code never calls mktemp. The dynamic builds (make build, build-debug) link no Foundation archive.
DIST_FLAGS := -c release --static-swift-stdlib -Xswiftc -use-ld=lld --scratch-path $(DIST_SCRATCH)
build-dist: deps pkgconfig
	$(SWIFT_BUILD) $(DIST_FLAGS) --product trackd
	$(SWIFT_BUILD) $(DIST_FLAGS) --product trackctl

install: build-dist
	BUILD_DIR=$(DIST_DIR) PREFIX=$(PREFIX) DESTDIR=$(DESTDIR) scripts/install.sh

DEB_FILE = $(CURDIR)/build/trackd_$(VERSION)_$(shell dpkg --print-architecture).deb
PACKAGE_DEPENDS = $(subst $(space),$(comma)$(space),$(strip $(RUNTIME_DEPS) $(PYTHON_DEPS)))
deb: build-dist
	@BUILD_DIR=$(DIST_DIR) OUT_DIR=$(CURDIR)/build VERSION=$(VERSION) RUNTIME_DEPENDS="$(PACKAGE_DEPENDS)" scripts/deb.sh

# make install's and make deb's layout, units, sysusers.d/tmpfiles.d entries and maintainer scripts, then the
# package at work: unpacked into a temp root, its trackd, trackctl and Python client run against each other
# (scripts/package-check.sh: temp dirs only). The debug build is what deb.sh must refuse.
package-check: deb build-debug
	@BUILD_DIR=$(DIST_DIR) DEBUG_DIR=$(DEBUG_DIR) DEB=$(DEB_FILE) VERSION=$(VERSION) RUNTIME_DEPENDS="$(PACKAGE_DEPENDS)" \
	  scripts/package-check.sh

# Tests find trackd and trackctl through TRACKD_BUILD_DIR.
# `make test` cannot hang: each Swift suite has a per-test time limit (TestSupport's TestLimits: the test is named
# when it runs over, and HangGuard ends the run a minute later if it still runs), and the Swift and Python runs
# each have one of their own here (scripts/bounded.sh), which ends the run with every process it started: the
# run is a session of its own, so the test runner, which swift test starts in a process group of its own, its
# daemons and their workers are all reached.
# The whole Swift run takes about 11 minutes on a loaded 2-core machine, a few alone.
SWIFT_TEST_TIMEOUT  ?= 45m
PYTHON_TEST_TIMEOUT ?= 15m
test: deps pkgconfig check verify-units
	$(SWIFT_BUILD) --build-tests
	@$(MAKE) --no-print-directory package-check
	TRACKD_BUILD_DIR=$(DEBUG_DIR) scripts/bounded.sh $(SWIFT_TEST_TIMEOUT) "make test: swift test" -- \
	  $(SWIFT) test --skip-build
	@$(MAKE) --no-print-directory fuzz-smoke
	@$(MAKE) --no-print-directory test-python

# The checks that need no build, first in make test (a few seconds). duplicates is a developer tool that not every
# machine has (CI machines start bare): its rows are printed where it is installed and never fail the run — a row
# is a place to look, not a verdict (CONTRIBUTING.md, "Before a branch is merged").
check: check-docs code-shape no-warnings-gate duplicates

check-docs:
	@$(PYTHON) scripts/check-docs.py --self-test
	@$(PYTHON) scripts/check-docs.py

code-shape:
	@scripts/code-shape.sh

# The gate every build goes through (SWIFT_BUILD above), checked on commands that do and do not print a warning.
no-warnings-gate:
	@scripts/no-warnings.sh --self-test

duplicates:
	@if command -v duplicates >/dev/null; then duplicates; \
	else echo "duplicates: not installed on this machine; its rows are not shown (nothing fails without it)"; fi

# make test while busy loops keep every core busy (at least 2; LOAD_PROCS=n), stopped however the run ends
# (scripts/test-under-load.sh): a test that fails only under load waits for something without a bound, or not at all.
# LOAD_TARGET=… runs another make target under the same load (to try the script on something short).
test-under-load:
	@LOAD_TARGET=$(LOAD_TARGET) scripts/test-under-load.sh

# Sanitizers (scripts/sanitize.sh, docs/SECURITY.md § Sanitizers): each build in its own scratch path, the normal
# build untouched; sanitized daemons and workers; reports fatal and collected in .build/sanitize-logs/.
SANITIZERS ?= thread address
test-sanitize: deps pkgconfig
	@scripts/sanitize.sh $(SANITIZERS)

# The Python tests' venv: ray (Ray Data), numpy, PyYAML from PyPI (clients/python/tests/requirements-test.txt),
# made once and kept in .build/venv-test/<hash of the requirements and the Python version>; a change of either
# makes a new one (the old one is removed). No --system-site-packages: ray[data] needs a newer numpy than
# Debian's python3-numpy (1.24), so the venv has its own. test-torch adds torch to the same venv.
VENV_REQS := clients/python/tests/requirements-test.txt
VENV_KEY   = $(shell { cat $(VENV_REQS); $(PYTHON) -V; } | sha256sum | cut -c1-16)
VENV_DIR   = $(CURDIR)/.build/venv-test/$(VENV_KEY)
VENV_PY    = $(VENV_DIR)/bin/python
PIP_QUIET := --quiet --disable-pip-version-check --root-user-action=ignore

venv-test:
	@if [[ ! -f "$(VENV_DIR)/.complete" ]]; then \
	  echo "venv-test: making $(VENV_DIR) (pip install -r $(VENV_REQS); once per requirements change)"; \
	  rm -rf "$(CURDIR)/.build/venv-test"; \
	  $(PYTHON) -m venv "$(VENV_DIR)"; \
	  "$(VENV_PY)" -m pip install $(PIP_QUIET) -r $(VENV_REQS); \
	  touch "$(VENV_DIR)/.complete"; \
	fi

# The client installed offline with pip into a temp dir from a copy of clients/python (what
# `pip install clients/python` does, without touching the tree); $$site is that dir. The copy leaves out a
# setuptools build/ and egg-info that an earlier `pip install clients/python` left in the tree: setuptools would
# install build/lib's older modules over the sources it did not judge newer.
define PYTHON_CLIENT_SITE
tmp=$$(mktemp -d "$${TMPDIR:-/tmp}/trackd-python.XXXXXX"); trap 'rm -rf "$$tmp"' EXIT; \
cp -r clients/python "$$tmp/src"; rm -rf "$$tmp/src/build" "$$tmp/src/"*.egg-info; \
$(PYTHON) -m pip install $(PIP_QUIET) --no-build-isolation --no-deps --no-index --target "$$tmp/site" "$$tmp/src"; \
site="$$tmp/site"
endef

# The Python client's unittest tests (clients/python/tests, with the README's examples and the Ray datasource
# on a local Ray cluster) in the test venv, against a trackd from .build/debug (built by `make test` or
# `make build-debug`). The PyTorch tests are test-torch's.
test-python: venv-test
	@$(PYTHON_CLIENT_SITE); \
	cd clients/python/tests; \
	PYTHONPATH="$$site" PYTHONDONTWRITEBYTECODE=1 TRACKD_BUILD_DIR=$(DEBUG_DIR) \
	  $(CURDIR)/scripts/bounded.sh $(PYTHON_TEST_TIMEOUT) "make test-python: the tests" -- \
	  "$(VENV_PY)" -m unittest discover -s . -t . -v

# PyTorch tests (clients/python/tests/torch_tests): torch from PyPI into the test venv — its Linux wheels pull
# NVIDIA's CUDA libraries, several GB, which is why make test does not do this — then the tests, which fail
# (never skip) when torch cannot be imported here.
TORCH_REQS := clients/python/tests/requirements-torch.txt
test-torch: venv-test
	@"$(VENV_PY)" -c 'import torch' 2>/dev/null || { \
	  echo "test-torch: pip install -r $(TORCH_REQS) into $(VENV_DIR) (several GB)"; \
	  "$(VENV_PY)" -m pip install $(PIP_QUIET) -r $(TORCH_REQS); }
	@$(PYTHON_CLIENT_SITE); \
	cd clients/python/tests; \
	PYTHONPATH="$$site:$(CURDIR)/clients/python/tests" PYTHONDONTWRITEBYTECODE=1 TRACKD_BUILD_DIR=$(DEBUG_DIR) \
	  TRACKD_REQUIRE_TORCH=1 "$(VENV_PY)" -m unittest discover -s torch_tests -t torch_tests -v

# The fuzzer is an integration test; `make test` runs the first 40 cases of a fixed seed, this for FUZZ_SECONDS (300).
# It prints its seed (FUZZ_SEED=n reproduces a run) and the outcomes; worker-crash inputs go to .build/fuzz/.
FUZZ_SECONDS ?= 300
fuzz-protocol: deps pkgconfig
	$(SWIFT_BUILD) --build-tests
	FUZZ_SECONDS=$(FUZZ_SECONDS) $(if $(FUZZ_SEED),FUZZ_SEED=$(FUZZ_SEED)) TRACKD_BUILD_DIR=$(DEBUG_DIR) \
	  $(SWIFT) test --skip-build --filter ProtocolFuzzTests

# The soak (Tests/IntegrationTests/SoakTests.swift) at operator length; make test runs a short one (SOAK_* unset).
SOAK_SECONDS ?= 300
SOAK_KILLED  ?= 1000
soak: deps pkgconfig
	$(SWIFT_BUILD) --build-tests
	SOAK_SECONDS=$(SOAK_SECONDS) SOAK_KILLED=$(SOAK_KILLED) TRACKD_BUILD_DIR=$(DEBUG_DIR) \
	  $(SWIFT) test --skip-build --filter SoakTests

# The media fuzzer (Tests/IntegrationTests/MediaFuzzTests.swift), time-bounded; FUZZ_SEED reproduces a run.
# Setting FUZZ_SECONDS makes these runs explore (a fresh seed each); make test walks fixed seeds (TestSeed).
FUZZ_SECONDS ?= 300
fuzz-media: deps pkgconfig
	$(SWIFT_BUILD) --build-tests
	FUZZ_SECONDS=$(FUZZ_SECONDS) $(if $(FUZZ_SEED),FUZZ_SEED=$(FUZZ_SEED)) FUZZ_DIR=$(CURDIR)/.build/fuzz \
	  TRACKD_BUILD_DIR=$(DEBUG_DIR) $(SWIFT) test --skip-build --filter MediaFuzzTests

# Coverage-guided fuzzing (libFuzzer, Fuzz/*.swift, scripts/fuzz.sh): the parsers Fuzz/README.md lists, built with
# -sanitize=fuzzer,address.
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

# make bench's own Python (never used by make test): the peer rows' libraries from PyPI, kept until
# scripts/bench/requirements*.txt change, and the trackd client from clients/python.
BENCH_VENV := $(CURDIR)/.build/venv-bench

bench-venv:
	@PYTHON=$(PYTHON) scripts/bench/venv.sh $(BENCH_VENV)

# The data-pipeline benchmark (bench-pipelines below) is not run by default: its venv is several GB of its own and a
# full run takes about an hour on 2 CPUs; its QUICK form only checks that it works. PIPELINES=1 runs it after.
bench: build bench-venv
	@BUILD_DIR=$(RELEASE_DIR) BENCH_PYTHON=$(BENCH_VENV)/bin/python scripts/bench.sh
	@$(if $(filter 1,$(PIPELINES)),BUILD_DIR=$(RELEASE_DIR) scripts/bench-pipelines.sh,echo "make bench: the data-pipeline \
	benchmark (issue #15: Ray Data, DataLoader) is make bench-pipelines, or PIPELINES=1 make bench")

# Issue #15: frames/s through Ray Data (trackd.ray.read_frames vs ray.data.read_videos) and a 2-worker DataLoader
# (trackd.torch.VideoClips vs TorchCodec) on 8 generated 720p clips; its own venv (.build/venv-bench-pipelines,
# several GB from PyPI). QUICK=1 checks that it works on 2 short clips. Report: build/bench/pipelines.md.
bench-pipelines: build
	@BUILD_DIR=$(RELEASE_DIR) $(if $(QUICK),QUICK=$(QUICK)) scripts/bench-pipelines.sh

clean:
	rm -rf .build build
