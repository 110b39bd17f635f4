"""What the layers promise beyond their imports (those are .importlinter's): a mode places
the ends and a tool measures, so neither a mode nor the run branches on a tool's name, and
no tool is found on a mode by a ``measure_<tool>``-style hook."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import netrun
from netrun.modes import get_mode, mode_tools
from netrun.modes.baremetal.mode import BareMetal
from netrun.modes.base import Mode
from netrun.tools import get_tool, tools
from netrun.tools.base import TOOL
from netrun.tools.iperf3 import ahead, resident

ROOT = Path(netrun.__file__).parent
#: ``tool == "iperf3"``, ``test.tool != 'netperf'``, ``tool in ("iperf2", ...)``.
TOOL_BRANCH = re.compile(r"""\btool\s*(==|!=|\bin\b|\bnot in\b)\s*[("'\[{]""")
#: A tool looked up on a mode by name.
HOOK = re.compile(r"""getattr\(\s*mode\s*,\s*["'](measure_|load_flow)""")


def sources(*packages: str) -> list[Path]:
    return sorted(p for pkg in packages for p in (ROOT / pkg).rglob("*.py"))


def offending(pattern: re.Pattern[str], files: list[Path]) -> list[str]:
    return [
        f"{path.relative_to(ROOT.parent)}:{n}: {line.strip()}"
        for path in files
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if pattern.search(line) and not line.lstrip().startswith("#")
    ]


def test_no_mode_and_no_run_step_branches_on_a_tools_name() -> None:
    """What differs by tool is the tool's declaration (netrun.tools.base.Tool: resident,
    server_ahead, preview...), read by whoever needs it."""
    assert offending(TOOL_BRANCH, sources("modes", "run")) == []


def tool_words() -> set[str]:
    """Every registered tool's name and every program a tool declares it runs."""
    words = set(tools())
    for tool in tools().values():
        words.update(p for programs in (tool.needs or {}).values() for p in programs)
    return words


def literal_comparisons(tree: ast.AST, words: set[str]) -> list[int]:
    """Lines comparing something with one of ``words`` as a string literal (``==``, ``!=``,
    ``in``, ``not in``, either side, alone or in a tuple, list or set)."""

    def names_one(node: ast.expr) -> bool:
        if isinstance(node, ast.Constant):
            return isinstance(node.value, str) and node.value in words
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return any(names_one(e) for e in node.elts)
        return False

    ops = (ast.Eq, ast.NotEq, ast.In, ast.NotIn)
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Compare)
        and any(isinstance(op, ops) for op in node.ops)
        and any(names_one(e) for e in (node.left, *node.comparators))
    ]


def test_no_mode_and_no_run_step_compares_with_a_tools_name() -> None:
    """Whatever the variable is called (``name == "iperf3"``, ``"iperf3" in wanted``): a
    mode says where the test's tool runs (TOOL in its needs), the tool says what that is
    (Tool.programs), and the probe what it reads a version of (netrun.tools.facts.PROBED)."""
    words = tool_words()
    found = [
        f"{path.relative_to(ROOT.parent)}:{n}"
        for path in sources("modes", "run")
        for n in literal_comparisons(ast.parse(path.read_text()), words)
    ]
    assert found == []


#: Packages of netrun/tools that are no tool's: what every tool shares (the round-trip
#: savers). Every other package there is a tool's (tool_packages).
SHARED_PACKAGES = {"savers"}
#: A tool's package that is not in the registry: ``load:``'s idle-then-loaded form of any
#: latency tool (the run and the modes take it through netrun.tools.form).
FORM_PACKAGES = {"load"}


def tool_packages() -> set[str]:
    """Every tool's package: each registered tool's (netrun.tools._MODULES) and each form's."""
    return {f"netrun.tools.{name}" for name in (*tools(), *FORM_PACKAGES)}


def imports_of(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every import in a file, ``TYPE_CHECKING`` ones and those inside
    functions too; ``from A import b`` counts as ``A`` and as ``A.b`` (b may be a module)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
            found += [(node.lineno, f"{node.module}.{a.name}") for a in node.names]
    return found


def tool_imports(files: list[Path], root: Path = ROOT.parent) -> list[str]:
    """Where ``files`` (under ``root``) import a tool's package or a module of one."""
    packages = tool_packages()
    return [
        f"{path.relative_to(root)}:{line}: {name}"
        for path in files
        for line, name in imports_of(path)
        if any(name == p or name.startswith(p + ".") for p in packages)
    ]


def test_every_package_of_tools_is_a_tools_or_shared() -> None:
    """A new package under netrun/tools is a tool's (registered, or a form) or named here
    as shared, so the check below never misses one by not knowing it."""
    found = {p.name for p in (ROOT / "tools").iterdir() if (p / "__init__.py").is_file()}
    assert found == {p.rsplit(".", 1)[1] for p in tool_packages()} | SHARED_PACKAGES


def test_no_mode_and_no_run_step_imports_a_tools_package() -> None:
    """A mode places the ends and a tool measures (issue 37): the modes and the run import
    netrun.tools, its base and its shared modules (ends, savers, facts, docker, ip, form...),
    never a tool's package. What they ask of a tool or its result is a declaration:
    Tool's fields, a result's capabilities (netrun.tools.base.SampleFigures for a sample's
    figures, PeersSeen for a relay's proof), the test's tool in its form (netrun.tools.form)."""
    assert tool_imports(sources("modes", "run")) == []


def test_the_import_check_catches_what_it_is_for(tmp_path: Path) -> None:
    caught = (
        "from netrun.tools.iperf2 import parse as iperf2",
        "from netrun.tools import iperf3",
        "import netrun.tools.ping.tool",
        "if TYPE_CHECKING:\n    from netrun.tools.load.spec import Load",
        "def f():\n    from netrun.tools.netperf.parse import parse",
    )
    left = (
        "from netrun.tools import form, get_tool",
        "from netrun.tools.base import TOOL, PeersSeen",
        "from netrun.tools.savers.model import Saver",
        "from netrun.tools import docker as dk",
    )
    for n, text in enumerate((*caught, *left)):
        path = tmp_path / f"m{n}.py"
        path.write_text(text + "\n")
        assert bool(tool_imports([path], tmp_path)) == (text in caught), text


def test_the_mode_base_imports_no_tool_and_its_needs_name_none() -> None:
    """A mode's default needs are "the test's tool, on both hosts" (TOOL), and the module
    every mode builds on imports no tool's package (the tools' shared parts only)."""
    assert Mode.needs == {"server": (TOOL,), "client": (TOOL,)}
    path = ROOT / "modes" / "base.py"
    assert imports_of(path) and tool_imports([path]) == []


def test_no_tool_reaches_a_mode_through_a_named_hook() -> None:
    assert offending(HOOK, sources("tools")) == []


def test_bare_metal_places_its_ends_and_measures_nothing_itself() -> None:
    """Bare metal is declarations alone: its ends are its hosts (Mode.place), its savers
    are what it allows; iperf3 measures with them (netrun.tools.iperf3.onhost) and builds
    the starts the run sends ahead (Tool.server_ahead), and the mode imports no tool."""
    own = {k for k, v in vars(BareMetal).items() if callable(v) or isinstance(v, classmethod)}
    assert own == set() and not hasattr(Mode, "measure")
    assert get_tool("iperf3").server_ahead is ahead.server_ahead
    text = (ROOT / "modes" / "baremetal" / "mode.py").read_text()
    assert "from netrun.tools.iperf3" not in text  # (.importlinter: the "places" contract)


def test_no_mode_measures_a_tool_itself() -> None:
    """Every tool measures through the ends a mode places; against a server its end keeps
    for the whole test (a container's PID 1, Tool.resident), the mode runs the client the
    tool builds (Placement.resident_client: docker's armed ``docker exec``) and the tool
    parses it (netrun.tools.iperf3.resident). No mode has a ``measure``, and the container
    modes import no iperf3 (.importlinter: the "places" contracts)."""
    for name in mode_tools():
        assert not hasattr(get_mode(name), "measure"), name
    assert get_tool("iperf3").resident_client is resident.client
    texts = [p.read_text() for p in sources("modes/docker", "modes/freeflow")]
    assert texts and not any("from netrun.tools.iperf3" in text for text in texts)


def test_the_patterns_catch_what_they_are_for() -> None:
    assert TOOL_BRANCH.search('if self.test.tool == "iperf2":')
    assert TOOL_BRANCH.search("if test.tool != 'iperf3':")
    assert TOOL_BRANCH.search('if tool in ("iperf2", "netperf"):')
    assert not TOOL_BRANCH.search("tool = get_tool(test.tool)")
    assert not TOOL_BRANCH.search("if self.tool is not None and tool != self.tool:")
    assert HOOK.search('own = getattr(mode, "measure_netperf", None)')


def test_the_comparison_check_catches_what_it_is_for() -> None:
    words = {"iperf3", "iperf"}
    caught = (
        'found = name == "iperf3"',
        'found = "iperf3" in wanted and x',
        "found = tool not in ('ping', 'iperf')",
        'found = x != "iperf3" or y',
    )
    for line in caught:
        assert literal_comparisons(ast.parse(line), words), line
    left = ('needs = {"server": ("iperf3",)}', "found = name == TOOL", 'found = "ip" in x')
    for line in left:
        assert not literal_comparisons(ast.parse(line), words), line


def test_what_a_resident_server_says_and_which_keys_shape_a_client_are_the_tools() -> None:
    """The words a tool's resident server prints once it listens and once per test it
    served, and the options that shape only its client, are its declaration
    (Tool.resident_ready, resident_served, client_only): the container modes count and
    compare them without holding any (issue 37)."""
    for name, tool in tools().items():
        assert tool.client_only <= {o.name for o in tool.options}, name
        if tool.resident is not None:
            assert tool.resident_ready, name
    assert get_tool("iperf3").resident_served == resident.LISTENING
    assert get_tool("iperf2").resident_served is None  # it says it listens once, at start
    assert get_tool("netperf").resident_served is None
    texts = [p.read_text() for p in sources("modes")]
    assert not any("Server listening" in text for text in texts)
