"""The container modes' round-trip savers (their kinds: netrun.tools.savers.model), apart
from the savers every mode uses alike (netrun.tools.savers) since they build on docker's
launch and path-bytes parts: the first test's containers started in the probes (``probe``,
Saver.PROBE_START), each repeat's client armed (``client``, Saver.ARMED_CLIENT), the
containers kept for the next test (``keep``, Saver.KEEP_CONTAINERS), the server end read
and each host swept by a command sent with the client (``serverend``, Saver.SERVER_WAIT,
Saver.EARLY_SWEEP).

May import: what netrun.modes.docker may, and its modules but ``mode``.
"""
