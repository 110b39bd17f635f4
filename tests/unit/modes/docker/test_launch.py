"""A container start command whose words take values the host works out (launch.shell_words)."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

from netrun.modes.docker import launch

TOKEN = "@@netrun-vnet@@"


def words_in_sh(line: str) -> list[str]:
    """The words sh makes of ``line`` with vnet set, one per output line."""
    script = f"vnet='10.244.0.0/16 x'; printf '%s\\n' {line}"
    out = subprocess.run(["sh", "-c", script], capture_output=True, text=True, check=True)
    return out.stdout.splitlines()


def test_token_becomes_the_variable_in_every_word() -> None:
    argv = ["docker", "run", "-e", f"VNET_PREFIX={TOKEN}", "--label", f"a b={TOKEN}!", "img"]
    line = launch.shell_words(argv, {TOKEN: "vnet"})
    assert words_in_sh(line) == [
        "docker", "run", "-e", "VNET_PREFIX=10.244.0.0/16 x", "--label",
        "a b=10.244.0.0/16 x!", "img",
    ]  # fmt: skip


def test_replacing_in_the_joined_line_left_a_quoted_word_unexpanded() -> None:
    """What launch.start did before: a word that needs quoting kept the literal ``"$vnet"``."""
    argv = ["--label", f"a b={TOKEN}"]
    old = shlex.join(argv).replace(TOKEN, '"$vnet"')
    assert words_in_sh(old)[1] == 'a b="$vnet"'
    assert words_in_sh(launch.shell_words(argv, {TOKEN: "vnet"}))[1] == "a b=10.244.0.0/16 x"


def test_no_tokens_is_shlex_join() -> None:
    argv = ["docker", "run", "", "it's"]
    assert launch.shell_words(argv, {}) == shlex.join(argv)
    assert launch.shell_words(argv, {TOKEN: "v"}) == shlex.join(argv)


def test_router_reads_the_host_prefix_in_sh(tmp_path: Path) -> None:
    """HOST_IP_PREFIX is the subnet of the data address, worked out on the host."""
    from netrun.modes.freeflow import router

    fake = tmp_path / "ip"
    fake.write_text(
        "#!/bin/sh\ncat <<'X'\n"
        "1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever\n"
        "7: data0    inet 10.141.187.33/21 brd 10.141.191.255 scope global data0\\  x\n"
        "8: eth1    inet 192.168.7.9/32 scope global eth1\\  x\n"
        "X\n"
    )
    fake.chmod(0o755)

    def prefix(ip: str) -> str:
        script = f'{router.prefix_script(ip)}; echo "$hostprefix"'
        env = {"PATH": f"{tmp_path}:/usr/bin:/bin"}
        out = subprocess.run(["sh", "-c", script], capture_output=True, text=True, env=env)
        return out.stdout.strip()

    assert prefix("10.141.187.33") == "10.141.184.0/21"
    assert prefix("192.168.7.9") == "192.168.7.9/32"
    assert prefix("127.0.0.1") == "127.0.0.0/8"
    assert prefix("10.141.187.3") == ""  # not this host's: the router says noprefix


FAKE_DOCKER = """#!/bin/sh
echo "$*" >> "$LOG"
case "$1 $*" in
run*"--entrypoint sh"*) echo "exec: \\"sh\\": executable file not found" >&2; exit 127 ;;
run*) echo c0ffee ;;
esac
"""


def test_a_failed_start_ahead_is_removed_and_the_plain_start_runs(tmp_path: Path) -> None:
    """A container started ahead whose gate cannot run (an image without sh): ``start``
    removes it and runs the plain ``docker run``, whose result the controller reads."""
    docker = tmp_path / "docker"
    docker.write_text(FAKE_DOCKER)
    docker.chmod(0o755)
    log = tmp_path / "log"
    plain = ["docker", "run", "-d", "--name", "c1", "--entrypoint", "iperf3", "img", "-s"]
    gated = ["docker", "run", "-d", "--name", "c1", "--entrypoint", "sh", "img", "-c", "x"]
    early = launch.ahead(gated, "c1", "docker", str(tmp_path))
    command, _ = launch.start(
        plain, "c1", "docker", str(tmp_path), 1, 0.05, ready="Server listening"
    )
    script = launch.gated(f"{early.run}; go=1", command)
    env = {"PATH": f"{tmp_path}:/usr/bin:/bin", "LOG": str(log)}
    out = subprocess.run(["sh", "-c", script], capture_output=True, text=True, env=env)
    assert launch.sections(out.stdout)["run"].split("\n")[0] == "0", out.stdout
    calls = [line for line in log.read_text().splitlines() if not line.startswith("container")]
    assert calls[:3] == [
        "run -d --name c1 --entrypoint sh img -c x",
        "rm -f -v c1",
        "run -d --name c1 --entrypoint iperf3 img -s",
    ], calls


def test_a_start_ahead_not_needed_is_dropped(tmp_path: Path) -> None:
    """When the mode's own step fails (no ``go``), its ``drop`` removes what started ahead."""
    docker = tmp_path / "docker"
    docker.write_text(FAKE_DOCKER)
    docker.chmod(0o755)
    log = tmp_path / "log"
    argv = ["docker", "run", "-d", "--name", "c2", "img"]
    early = launch.ahead(argv, "c2", "docker", str(tmp_path))
    command, _ = launch.start(argv, "c2", "docker", str(tmp_path), 1, 0.05, ready="x")
    script = launch.gated(f'{early.run}; go=; [ "$go" = 1 ] || {{ {early.drop}; }}', command)
    env = {"PATH": f"{tmp_path}:/usr/bin:/bin", "LOG": str(log)}
    out = subprocess.run(["sh", "-c", script], capture_output=True, text=True, env=env)
    assert "==netrun:run==" not in out.stdout
    assert log.read_text().splitlines() == ["run -d --name c2 img", "rm -f -v c2"]
    assert not list(tmp_path.glob("*.err"))
