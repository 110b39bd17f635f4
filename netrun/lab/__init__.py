"""The emulated lab: hosts as network namespaces with sshd, a shaped data plane, and
optionally one Docker daemon per host on a real flanneld's VXLAN overlay.

`netrun lab up|down|status|inventory` call these; they never print (progress goes to a callback).

May import: netrun.errors only (it is used by the CLI and the tests).
"""
