"""Bare metal: the tool straight on the hosts, with the round-trip savers it allows
(netrun.tools.savers: its servers started in the probe or ahead, its clients armed, each
host swept by its last measurement).

May import: netrun.modes.base, netrun.tools.savers and below.
"""
