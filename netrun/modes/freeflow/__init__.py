"""FreeFlow: a privileged router container per host and an
LD_PRELOAD socket library, on top of the Flannel mode.

May import: netrun.modes.docker and below.
"""
