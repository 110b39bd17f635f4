"""The labels netrun puts on every container it starts: a sweep removes only what carries
them (its run's, and on a daemon several hosts share, its host's), as pyinfra's docker
connector removes only the containers it created."""

from __future__ import annotations

#: Every container netrun starts carries these labels (plus netrun.run_id).
LABEL = "netrun"
RUN_LABEL = "netrun.run_id"
#: Which host of the run started it (netrun.hosts.host.folder_key): hosts that share one
#: Docker daemon each remove only their own.
HOST_LABEL = "netrun.host"
