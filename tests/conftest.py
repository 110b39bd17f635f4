"""Paths every test shares: the checkout under test and its captured fixtures.

Test files import them (``from tests.conftest import FIXTURES, ROOT``) rather than climbing
from their own ``__file__``, so a test file can move in the tree without its paths breaking.
The fixtures are real tool output and saved runs (tests/fixtures/capture.sh made most).
"""

from __future__ import annotations

from pathlib import Path

#: The checkout under test (a subprocess's cwd or PYTHONPATH, docs/, scenarios/).
ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
CONTEXT_FIXTURES = FIXTURES / "context"
COUNTERS_FIXTURES = FIXTURES / "counters"
DOCKER_FIXTURES = FIXTURES / "docker"
FACTS_FIXTURES = FIXTURES / "facts"
HISTORY_FIXTURES = FIXTURES / "history"
HISTORYDB_FIXTURES = FIXTURES / "historydb"
INVENTORY_FIXTURES = FIXTURES / "inventory"
IPERF2_FIXTURES = FIXTURES / "iperf2"
IPERF3_FIXTURES = FIXTURES / "iperf3"
KUBERNETES_FIXTURES = FIXTURES / "kubernetes"
LOAD_FIXTURES = FIXTURES / "load"
NETDEV_FIXTURES = FIXTURES / "netdev"
CPUSTAT_FIXTURES = FIXTURES / "cpustat"
NETPERF_FIXTURES = FIXTURES / "netperf"
PING_FIXTURES = FIXTURES / "ping"
RESULTS_FIXTURES = FIXTURES / "results"
SAMPLER_FIXTURES = FIXTURES / "sampler"
SCENARIOS_FIXTURES = FIXTURES / "scenarios"
