"""An end in a pod: the host that stands for its node runs kubectl, every argv runs in the
pod through ``kubectl exec`` (netrun.tools.ends.End).

A tool's script runs on the host (its run folder, its pid files), each ``wrap``-ped argv in
the pod. A process ``start``-ed in the background is a ``kubectl exec -i`` whose stdin
stays open (a FIFO the host opens for reading and writing, so no process holds it): in
the pod a watcher kills the process once that stdin ends, which it does when the
kubectl on the host is stopped (by its pid file, as every End's ``start``). So stopping
it at the host stops it in the pod, and its lifetime bound on the host bounds both.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import TYPE_CHECKING

from netrun.hosts import proc
from netrun.tools.ends import HostEnd, Recorder, Started

if TYPE_CHECKING:
    from netrun.hosts.command import CommandResult
    from netrun.hosts.host import Host
    from netrun.modes.kubernetes.kubectl import Kubectl

#: In the pod: run "$@", and kill it once stdin (kept as fd 3) ends; its exit status.
WATCHED = (
    'exec 3<&0 </dev/null; "$@" & p=$!; { read -r _ <&3; kill "$p" 2>/dev/null; } & '
    'w=$!; exec 3<&-; wait "$p"; r=$?; kill "$w" 2>/dev/null; exit "$r"'
)


class PodEnd(HostEnd):
    """One end of a test in pod ``pod`` of ``namespace``, reached with ``kubectl`` on
    ``host`` (the inventory host standing for the pod's node); peers dial ``address``
    (the pod's IP, the node's for a hostNetwork pod), a server there binds it too."""

    def __init__(
        self,
        mode: Recorder,
        role: str,
        host: Host,
        address: str,
        *,
        kubectl: Kubectl,
        namespace: str,
        pod: str,
        host_network: bool = False,
    ) -> None:
        super().__init__(mode, role, host, address)
        self.bind = address
        self.kubectl = kubectl
        self.namespace = namespace
        self.pod = pod
        #: A pod-network pod has a network namespace of the test's own (a fixed port is
        #: free there); a hostNetwork pod shares its node's.
        self.own_ports = not host_network

    def program(self, var: str, default: str) -> str:
        """The image's own program (a host's netrun_* paths name nothing in the pod)."""
        return default

    def wrap(self, argv: Sequence[str]) -> list[str]:
        return self.kubectl.exec_argv(self.namespace, self.pod, argv)

    def start(
        self,
        argv: Sequence[str],
        name: str,
        *,
        lifetime: float,
        what: str,
        ready: str = "",
    ) -> Started:
        """``argv`` in the pod, in the background, under ``timeout`` on the host; output
        in ``<workdir>/<name>.out`` on the host, the host's kubectl pid in ``<name>.pid``,
        after an undo record that stops it (and with it the process in the pod); then
        ``ready`` in the pod, in the same round trip."""
        workdir = self.workdir
        out, pidfile, fifo = (f"{workdir}/{name}.{ext}" for ext in ("out", "pid", "in"))
        q = shlex.quote
        inner = self.kubectl.exec_argv(
            self.namespace, self.pod, ["sh", "-c", WATCHED, "sh", *argv], stdin=True
        )
        bounded = shlex.join(["timeout", "-k", "5", f"{lifetime:g}", *inner])
        script = (
            f"mkdir -p {q(workdir)} && chmod 700 {q(workdir)} || exit 1\n"
            f"rm -f {q(fifo)} && mkfifo -m 600 {q(fifo)} || exit 1\n"
            f"{bounded} > {q(out)} 2>&1 0<> {q(fifo)} & {proc.save_pid(pidfile)}"
        )
        if ready:
            script = f"{script}\n{self.at(ready)}"
        undo = proc.kill_recorded(pidfile)
        res = self.mode.change(self.host, script, undo, what=what, check=not ready)
        return Started(self, out, pidfile, res if ready else None)

    def at(self, script: str) -> str:
        """sh on the host running ``script`` in the pod (it needs sh there)."""
        return shlex.join(self.wrap(["sh", "-c", script]))

    def recording(self, argv: Sequence[str], name: str) -> tuple[list[str], str]:
        """``argv`` in the pod behind a wrapper on the host recording the pid of the
        kubectl that runs it (in the run's folder on the host, where ``stop_script``
        looks): stopping it ends the exec; the process in the pod ends by its own bound."""
        pidfile = self.path(f"{name}.pid")
        keep = f'{proc.save_pid(pidfile, "$$")} && exec "$@"'
        return ["sh", "-c", keep, "sh", *self.wrap(argv)], pidfile

    def put(self, path: str, text: str, *, timeout: float = 15) -> CommandResult:
        """A file in the pod, written by ``cat`` there from kubectl's stdin."""
        cat = self.kubectl.exec_argv(
            self.namespace, self.pod, ["sh", "-c", 'cat > "$1"', "sh", path], stdin=True
        )
        script = f"printf %s {shlex.quote(text)} | {shlex.join(cat)}"
        return self.run(script, timeout=timeout, check=True)
