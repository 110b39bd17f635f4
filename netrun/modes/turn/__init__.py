"""TURN: iperf2 through a TURN relay, with netrun's own tunnel.

May import: netrun.modes.base and below.
"""
