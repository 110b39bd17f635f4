# The README's two commands: `make demo` (as root; `sudo make demo` otherwise) and `make test`.
#
# netrun lives in a virtual environment of its own (.venv, made by the Python that runs `make`,
# python3 by default): Debian's own Python refuses `pip install` outside one (PEP 668), and a
# venv keeps netrun's libraries apart from the system's. `make setup` links the venv's `netrun`
# into BINDIR (/usr/local/bin for root, ~/.local/bin otherwise) so that it is on PATH.
SYSTEM_PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
NETRUN := $(VENV)/bin/netrun
ifeq ($(shell id -u),0)
BINDIR ?= /usr/local/bin
SUDO :=
else
BINDIR ?= $(HOME)/.local/bin
SUDO := $(shell command -v sudo >/dev/null 2>&1 && echo sudo)
endif
APT_PACKAGES = iperf3 iperf coturn ethtool iproute2 iptables openssh-server openssh-client \
	docker.io containerd runc procps psmisc gcc libc6-dev sudo python3 python3-venv \
	git make g++ autoconf automake libtool pkg-config iputils-ping chromium \
	etcd-server etcd-client
INVENTORY ?= inventories/local.yaml
SCENARIO ?= scenarios/freeflow.yaml
#: A clone of https://github.com/microsoft/Freeflow (tcp and master branches): `make demo`
#: then builds and runs the real FreeFlow router; without it the lab's stand-in is used.
FREEFLOW_SRC ?=
#: netperf's source (not a Debian 12 package): `make setup` builds it once into the lab's
#: cache (/var/cache/netrun/netperf, as root), for tool: netperf on the emulated lab.
NETPERF_SRC ?= ../shared/third_party/netperf.bundle
#: `make test` draws every property-based test's inputs from this seed, so the same tree gives
#: the same verdict on every run; `make fuzz` draws fresh ones (FUZZ_SEED=N repeats a run).
#: A clone (or bundle) of https://github.com/esnet/iperf with its tags: `make iperf3-versions`
#: builds IPERF3_VERSIONS from it into the lab's cache (what `netrun lab up --iperf3 V` and
#: tests/integration/test_iperf3_versions_lab.py use); absent, that test builds or skips.
IPERF3_SRC ?= $(abspath $(CURDIR)/../shared/third_party/iperf.bundle)
IPERF3_VERSIONS ?= 3.5 3.7 3.9 3.12 3.16 3.19.1 3.21
#: A clone (or bundle) of https://github.com/cloud-bulldozer/k8s-netperf with its release tag:
#: `make k8s-netperf` builds it (its modules from the Go module proxy, which refuses the
#: k8s-netperf module itself) into /var/cache/netrun/k8s-netperf, for
#: tests/integration/test_k8s_netperf.py and docs/k8s-netperf.md; absent, that test skips.
K8S_NETPERF_SRC ?= $(CURDIR)/third_party/k8s-netperf.bundle
FUZZ_SEED ?= 20261130
PYTEST_ARGS ?=

.PHONY: k8s setup packages venv link netperf turncat flanneld k8s-netperf need-root demo iperf3-versions test unit cases lint docs docs-keys lab-down bench faults fuzz reliability wheel-check

setup: packages venv link netperf  ## apt packages, the venv with netrun and its test extras, the link, netperf

packages:  ## the Debian packages the lab and the tests need (apt-get, through sudo if not root)
	@if command -v apt-get >/dev/null 2>&1; then \
		missing=""; for p in $(APT_PACKAGES); do \
			dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
		if [ -n "$$missing" ]; then \
			if [ "$$(id -u)" != 0 ] && [ -z "$(SUDO)" ]; then \
				echo "make: missing Debian packages:$$missing; install them as root" \
					"(apt-get install$$missing), or run this as root" >&2; exit 1; fi; \
			$(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive \
			apt-get install -y -qq --no-install-recommends $$missing; fi; fi

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	@$(SYSTEM_PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { \
		echo "make: netrun needs Python 3.11 or newer; $(SYSTEM_PYTHON) is older" \
			"(SYSTEM_PYTHON=python3.11 make ...)" >&2; exit 1; }
	@[ -x $(PY) ] && $(PY) -c 'import pip' 2>/dev/null || { rm -rf $(VENV) && \
		$(SYSTEM_PYTHON) -m venv $(VENV); }
	$(PY) -m pip install -q --disable-pip-version-check -e '.[test,docs]'
	@touch $@

link: venv  ## netrun on PATH: a link to the venv's entry point (never over a foreign one)
	@target="$(BINDIR)/netrun"; mkdir -p "$(BINDIR)"; \
	if [ -e "$$target" ] && ! [ -L "$$target" ]; then \
		echo "make: $$target exists and is not a link; left alone (use $(NETRUN))"; \
	else ln -sfn "$(CURDIR)/$(NETRUN)" "$$target" && echo "netrun: $$target -> $(CURDIR)/$(NETRUN)"; fi

iperf3-versions: venv  ## build each IPERF3_VERSIONS from IPERF3_SRC once (cached; needs root)
	@if [ ! -e "$(IPERF3_SRC)" ]; then echo "iperf3-versions: no $(IPERF3_SRC); skipped"; \
	elif [ "$$(id -u)" != 0 ]; then echo "iperf3-versions: the lab's cache needs root; skipped"; \
	else start=$$(date +%s); nice $(PY) -c 'import sys; from pathlib import Path; \
		from netrun.lab import iperf3 as i; \
		[i.build(i.source(Path(sys.argv[1]), v), print) for v in sys.argv[2:]]' \
		"$(IPERF3_SRC)" $(IPERF3_VERSIONS) && \
		echo "iperf3-versions: $(IPERF3_VERSIONS) ready in $$(( $$(date +%s) - start )) s"; fi

demo: need-root setup  ## bring the emulated lab (with Docker) up and run the main scenario on it
	$(NETRUN) lab up --docker $(if $(FREEFLOW_SRC),--freeflow-src "$(FREEFLOW_SRC)")
	$(NETRUN) $(SCENARIO) -i $(INVENTORY)

netperf: venv  ## netperf and netserver built from NETPERF_SRC into the lab's cache (once, as root)
	@if [ "$$(id -u)" != 0 ]; then echo "netperf: not built (needs root: sudo make netperf)"; \
	elif [ ! -e "$(NETPERF_SRC)" ]; then echo "netperf: not built (no source at $(NETPERF_SRC);" \
		"set NETPERF_SRC to a clone of https://github.com/HewlettPackard/netperf)"; \
	else $(NETRUN) lab netperf --netperf-src "$(NETPERF_SRC)"; fi

k8s: venv  ## Kubernetes (K8S_VERSION) built from the Go module proxy into the lab's cache (once, as root)
	@if [ "$$(id -u)" != 0 ]; then echo "k8s: not built (needs root: sudo make k8s)"; \
	elif ! command -v go >/dev/null && [ ! -x /usr/local/go/bin/go ]; then \
		echo "k8s: not built (no Go on PATH or in /usr/local/go)"; \
	else $(PY) -c 'import signal, sys; from netrun.lab.k8s import build; \
		signal.signal(signal.SIGTERM, signal.default_int_handler); \
		built = build.build(sys.argv[1], print); build.flannel_cni(built); print(built)' \
		$(or $(K8S_VERSION),1.37.2); fi

turncat: venv  ## STUNner's turncat built from the Go module proxy into the lab's cache (once, as root)
	@if [ "$$(id -u)" != 0 ]; then echo "turncat: not built (needs root: sudo make turncat)"; \
	elif ! command -v go >/dev/null && [ ! -x /usr/local/go/bin/go ]; then \
		echo "turncat: not built (no Go on PATH or in /usr/local/go)"; \
	else nice $(NETRUN) lab turncat; fi

flanneld: venv  ## flanneld built from the Go module proxy into the lab's cache (once, as root)
	@if [ "$$(id -u)" != 0 ]; then echo "flanneld: not built (needs root: sudo make flanneld)"; \
	elif ! command -v go >/dev/null && [ ! -x /usr/local/go/bin/go ]; then \
		echo "flanneld: not built (no Go on PATH or in /usr/local/go)"; \
	else nice $(NETRUN) lab flanneld; fi

k8s-netperf: venv  ## k8s-netperf built from K8S_NETPERF_SRC, its modules from the Go module proxy (once, as root)
	@if [ "$$(id -u)" != 0 ]; then echo "k8s-netperf: not built (needs root: sudo make k8s-netperf)"; \
	elif [ ! -e "$(K8S_NETPERF_SRC)" ]; then echo "k8s-netperf: not built (no $(K8S_NETPERF_SRC))"; \
	else nice $(NETRUN) lab k8s-netperf --k8s-netperf-src "$(K8S_NETPERF_SRC)"; fi

need-root:
	@[ "$$(id -u)" = 0 ] || { echo "make: the emulated lab needs root: sudo make demo" >&2; exit 1; }

test: venv  ## every test but the long fuzzers; integration tests need root (they build their own lab)
	@$(PY) -m pytest -m "not fuzz" --hypothesis-seed=$(FUZZ_SEED) $(PYTEST_ARGS); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest: no tests collected"; rc=0; fi; exit $$rc

unit: venv  ## the unit tests alone (no root, no lab)
	$(PY) -m pytest -m "not fuzz" --hypothesis-seed=$(FUZZ_SEED) tests/unit $(PYTEST_ARGS)

cases: venv  ## rewrite tests/unit/modes/cases' expected commands from the code; then read the diff
	$(PY) -m tests.unit.modes.regen $(CASES)

lint: venv  ## ruff (lint and format), the layers and no import cycle (import-linter), mypy
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports
	$(VENV)/bin/mypy --no-implicit-reexport netrun

docs: venv  ## the documentation site into build/site; --strict: every internal link resolves
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict -d build/site

docs-keys: venv  ## rewrite docs/user-guide/scenario-keys.md from the code's option declarations
	$(PY) docs/gen_keys.py

lab-down:
	$(NETRUN) lab down

bench: venv  ## throughput ratio, per-test overhead, and the cost at 4..32 hosts (emulated lab)
	$(PY) bench/overhead.py --docker $(if $(BENCH_AGAINST),--against $(BENCH_AGAINST))
	$(PY) bench/scale.py

faults: venv  ## the fault-injection suite alone (needs root)
	$(PY) -m pytest -m faults $(PYTEST_ARGS)

fuzz: venv  ## the long property-based fuzzers (10,000 examples per target), fresh inputs
	@seed=$${NETRUN_FUZZ_SEED:-$$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}; \
	echo "fuzz seed $$seed (NETRUN_FUZZ_SEED=$$seed make fuzz repeats this run)"; \
	NETRUN_FUZZ_SEED=$$seed $(PY) -m pytest -m fuzz --hypothesis-seed=$$seed $(PYTEST_ARGS)

reliability: venv  ## both, with their figures written into docs/reliability.md
	$(PY) bench/reliability.py

wheel-check: venv  ## a built wheel installs into a clean venv and its netrun runs
	@rm -rf build/wheel-check && mkdir -p build/wheel-check
	$(PY) -m build --wheel --outdir build/wheel-check/dist . >build/wheel-check/build.log
	$(SYSTEM_PYTHON) -m venv build/wheel-check/venv
	build/wheel-check/venv/bin/python -m pip install -q --disable-pip-version-check \
		build/wheel-check/dist/*.whl
	cd /tmp && $(CURDIR)/build/wheel-check/venv/bin/netrun --version
