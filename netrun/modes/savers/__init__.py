"""The round-trip savers: what a run starts ahead of a measurement, or lets ride on a
command sent anyway, so that a test costs fewer round trips to its hosts.

``model`` says what each saver does and which a mode allows (``Mode.savers``); ``state``
holds what the run keeps of them (``RunContext.ahead``); ``prestart`` (a start riding on a
host's probe), ``pipeline`` (each next test's server started while a test runs), ``sweep``
(each host swept by its last measurement) and ``choice`` (which of them a run takes) are
the savers every mode uses alike. The container savers, which build on docker's launch
and path-bytes parts, are docker's own package (netrun.modes.docker.savers).

May import: netrun.tools and below; never netrun.modes.base nor a mode family (base and
every family import this package).
"""
