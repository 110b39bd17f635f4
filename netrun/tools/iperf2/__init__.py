"""iperf2: latency, jitter and loss at a fixed packet rate.

May import: what netrun.tools may import.
"""
