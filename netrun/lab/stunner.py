"""STUNner's turncat for the lab's hosts: built from the Go module proxy once, cached by version.

The reference write-up's TURN figures were measured with STUNner's ``turncat``
(github.com/l7mp/stunner, ``cmd/turncat``); netrun's own tunnel (netrun/modes/turn/tunnel.py)
is modelled on it. `netrun lab turncat` builds the real one (netrun.lab.go_program, with
netrun/lab_assets/build-go-program.sh: a throwaway module, ``go get``, ``go build``) into
``<cache>/stunner/<version>/bin/turncat``, so a test or a scenario's ``turn_client: turncat``
can run it beside netrun's tunnel on the same relay. Nothing of STUNner is kept in this
repository.
"""

from __future__ import annotations

from netrun.lab import images
from netrun.lab.go_program import GoProgram

MODULE = "github.com/l7mp/stunner"
TURNCAT = f"{MODULE}/cmd/turncat"
#: the release the write-up's S3 figures name; `lab turncat --version` picks another
VERSION = "v1.2.1"
TURNCAT_BUILD = GoProgram(
    "STUNner turncat", "stunner", "turncat", VERSION, images.ASSETS / "build-go-program.sh",
    timeout=3600.0,  # cold: 869 s at load 13, over 1800 s at load 25-29 on 2 cores
    args=(TURNCAT,),
)  # fmt: skip
cached = TURNCAT_BUILD.cached
build = TURNCAT_BUILD.build
