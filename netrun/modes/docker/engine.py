"""A host's Docker engine and images: checked once per host and run, in the first
command the run sends the host (launch.preamble), or pulled and loaded when missing.
"""

from __future__ import annotations

import shlex
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from netrun.cleanup.labels import HOST_LABEL, RUN_LABEL
from netrun.errors import ModeError
from netrun.hosts.host import Host, folder_key
from netrun.modes.docker import launch
from netrun.tools import docker as dk

if TYPE_CHECKING:
    from netrun.hosts.command import CommandResult
    from netrun.modes.docker.base import ContainerMode

_lock = threading.Lock()


def checked_run(
    mode: ContainerMode, host: Host, body: str, timeout: float, lead: str = ""
) -> CommandResult:
    """Run ``body`` on ``host``, after the engine and image checks when they have not
    been made there in this run (in the same round trip: launch.preamble), ``lead``
    (ContainerMode.lead) first: beside the checks, else before ``body``."""
    checks = first_checks(mode, host, lead)
    led = f"{lead}\n{body}" if lead else body
    if checks is None:
        return host.run(led, timeout=timeout, check=False)
    pre, checked, first = checks
    res = host.run(pre + body, timeout=timeout + 30, check=False)
    if read_checks(mode, host, res, checked, first):
        return res
    prepare_host(mode, host, mode.images(host))  # pull or load what is missing, or say why not
    return host.run(led, timeout=timeout, check=False)


def first_checks(
    mode: ContainerMode, host: Host, lead: str = ""
) -> tuple[str, list[str], bool] | None:
    """(preamble, the images it checks, whether it checks the engine) for the host's next
    command, or None when the run checked everything there already. ``lead``: sh run
    beside the checks (ContainerMode.lead)."""
    docker = mode.docker(host)
    images = mode.images(host)
    with _lock:
        first = host.name not in mode.ctx.known.engines
        known = {i: mode.ctx.known.images.get((host.name, i)) for i in images}
    if not first and all(known.values()) and mode.value("pull", host) != "always":
        note_images(mode, host, known)
        return None
    record = label_sweep_record(mode, host) if first else None
    pull = mode.value("pull", host) == "always"  # the preamble stops: prepare_host pulls
    pre = launch.preamble(record, docker, images, mode.ctx.workdir(host), pull=pull, lead=lead)
    return pre, images, first


def label_sweep_record(mode: ContainerMode, host: Host) -> str:
    """sh writing the run's per-host record that removes its labelled containers: run by
    the final sweep (or the next run's, or netrun cleanup, after a SIGKILL); with no
    docker there it finds nothing."""
    docker = mode.docker(host)
    label = shlex.quote(f"label={RUN_LABEL}={mode.ctx.run_id}")
    mine = shlex.quote(f"label={HOST_LABEL}={folder_key(host.name)}")
    d = shlex.quote(docker)
    return mode.new_record(
        host,
        f'ids=$({d} ps -aq --filter {label} --filter {mine}); [ -z "$ids" ] || {d} rm -f $ids',
        what=f"remove the run's containers ({docker})",
        per_run=True,
    )


def record_error(mode: ContainerMode, host: Host, res: CommandResult) -> ModeError:
    return ModeError(
        f"{host.name}: cannot write an undo record in {mode.ctx.workdir(host)}: "
        f"{(res.stderr or res.stdout).strip()[-200:]}; check netrun_remote_tmp"
    )


def read_checks(
    mode: ContainerMode, host: Host, res: CommandResult, checked: list[str], first: bool
) -> bool:
    """Read the preamble's answer: raise what is wrong with the record or the engine;
    False when it stopped before the command (an image to pull or load)."""
    found = launch.sections(res.stdout)
    if first:
        if launch.RECORDED not in found[""].splitlines()[:1]:
            raise record_error(mode, host, res)
        rc = found.get("enginerc", "").strip()
        engine = dk.parse_version(
            found.get("engine", ""),
            found.get("engineerr", "") or res.stderr,
            int(rc) if rc.isdigit() else res.exited,
            host.name,
        )
        with _lock:
            mode.ctx.known.engines[host.name] = engine
            mode.ctx.known.docker_hosts[host.name] = mode.docker(host)
    if "stop" in found:
        return False
    note_images(mode, host, launch.image_ids(found, checked))
    return True


def note_images(mode: ContainerMode, host: Host, ids: Mapping[str, str | None]) -> None:
    engine = mode.ctx.known.engines.get(host.name)
    if engine is not None:
        mode.details.setdefault("engine", {})[host.name] = engine.server_version
    for image, image_id in ids.items():
        if image_id:
            with _lock:
                mode.ctx.known.images[(host.name, image)] = image_id
            mode.details.setdefault("image_ids", {}).setdefault(image, {})[host.name] = image_id


def prepare_host(mode: ContainerMode, host: Host, images: list[str]) -> None:
    """Make sure every image is there, once the engine was checked (read_checks)."""
    note_images(mode, host, {image: ensure_image(mode, host, image) for image in images})


def docker_run(host: Host, argv: list[str], timeout: float = 60) -> str:
    """Run a docker command on a host; a failure names the host and docker's message."""
    res = host.run(argv, timeout=timeout, check=False)
    if not res.ok:
        raise dk.DockerError(
            f"{host.name}: {' '.join(argv[:3])} failed (exit {res.exited})",
            res.stderr or res.stdout,
        )
    return res.stdout


def ensure_image(mode: ContainerMode, host: Host, image: str) -> str:
    docker = mode.docker(host)
    pull = mode.value("pull", host)
    res = host.run(dk.image_id_command(image, docker), timeout=30, check=False)
    image_id = dk.parse_image_id(res.stdout) if res.ok else None
    if image_id and pull != "always":
        return image_id
    archive = mode.value("image_archive", host)
    if archive and not image_id and image == mode.value("image", host):
        return load_archive(mode, host, image, Path(archive))
    if pull == "never":
        raise ModeError(
            f"{host.name}: image {image} is not on the host and pull is 'never'; load it "
            "(docker load), set image_archive, or use pull: if-missing"
        )
    docker_run(host, dk.pull_command(image, docker), timeout=600)
    res = host.run(dk.image_id_command(image, docker), timeout=30, check=False)
    found = dk.parse_image_id(res.stdout)
    if not found:
        raise ModeError(f"{host.name}: image {image} still missing after docker pull")
    return found


def load_archive(mode: ContainerMode, host: Host, image: str, archive: Path) -> str:
    """Upload an image tarball over SFTP and docker-load it (air-gapped labs)."""
    if not archive.is_file():
        raise ModeError(
            f"test {mode.test.name}: image_archive {archive} not found on the controller; "
            "fix the path (relative paths are from the current directory)"
        )
    if host.transport is None:
        raise ModeError(f"{host.name}: not connected")
    # Named per host: in an emulated lab all hosts share one /tmp.
    remote = f"{mode.ctx.workdir(host)}/{host.name}.{archive.name}"
    host.run(["mkdir", "-p", mode.ctx.workdir(host)], timeout=30)
    host.transport.put(archive, remote, timeout=600)
    try:
        docker_run(host, dk.load_command(remote, mode.docker(host)), timeout=600)
    finally:
        host.run(["rm", "-f", remote], timeout=30, check=False)
    res = host.run(dk.image_id_command(image, mode.docker(host)), timeout=30, check=False)
    found = dk.parse_image_id(res.stdout)
    if not found:
        raise ModeError(f"{host.name}: {archive.name} was loaded but holds no image {image}")
    return found
