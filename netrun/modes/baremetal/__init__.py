"""Bare metal: the tool straight on the hosts, and the round trips
saved by starting servers ahead.

May import: netrun.modes.base and below.
"""
