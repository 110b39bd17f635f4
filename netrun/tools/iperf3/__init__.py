"""iperf3: its commands, its JSON, its server and one measurement.

May import: what netrun.tools may import.
"""
