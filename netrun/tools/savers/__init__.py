"""The round-trip savers: what a run starts ahead of a measurement, or lets ride on a
command sent anyway, so that a test costs fewer round trips to its hosts.

``model`` says what each saver does and which a mode allows (``Mode.savers``); ``state``
holds what the run keeps of them (``RunContext.ahead``); ``prestart`` (a start riding on a
host's probe), ``pipeline`` (each next test's server started while a test runs), ``sweep``
(each host swept by its last measurement) and ``choice`` (which of them a run takes) are
the savers every mode uses alike; a tool's measurement drives them (iperf3's on the
hosts themselves: netrun.tools.iperf3.onhost), so they sit below the tools. The container
savers, which build on docker's launch and path-bytes parts, are docker's own package
(netrun.modes.docker.savers).

May import: netrun.cleanup and below; never netrun.tools.base nor a tool (tools.base and
the tools import this package).
"""
