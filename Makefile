# The README's commands. `sudo make demo` on a fresh Debian machine; `make test` for the tests.
PY ?= python3
APT_PACKAGES = iperf3 iperf ethtool iproute2 iptables openssh-server openssh-client \
	docker.io procps psmisc gcc libc6-dev sudo
INVENTORY ?= inventories/local.yaml
SCENARIO ?= scenarios/freeflow.yaml
PYTEST_ARGS ?=

.PHONY: setup demo test unit lint lab-down bench faults fuzz reliability

setup:  ## apt packages and the package with its test extras
	@if command -v apt-get >/dev/null 2>&1; then \
		missing=""; for p in $(APT_PACKAGES); do \
			dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
		if [ -n "$$missing" ]; then \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
			apt-get install -y -qq --no-install-recommends $$missing; fi; fi
	$(PY) -m pip install -q -e '.[test]'

demo: setup  ## bring the emulated lab (with Docker) up and run the main scenario against it
	netrun lab up --docker
	netrun $(SCENARIO) -i $(INVENTORY)

test:  ## every test; integration tests need root (they build their own lab)
	@$(PY) -m pytest $(PYTEST_ARGS); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest: no tests collected"; rc=0; fi; exit $$rc

unit:
	$(PY) -m pytest tests/unit $(PYTEST_ARGS)

lint:
	ruff check . && ruff format --check .

lab-down:
	netrun lab down

bench:  ## throughput ratio and per-test overhead against the emulated lab
	$(PY) bench/overhead.py --docker

faults:  ## the fault-injection suite alone (needs root)
	$(PY) -m pytest -m faults $(PYTEST_ARGS)

fuzz:  ## the long property-based fuzzers (10,000 examples per target)
	$(PY) -m pytest -m fuzz $(PYTEST_ARGS)

reliability:  ## both, with their figures written into docs/reliability.md
	$(PY) bench/reliability.py
