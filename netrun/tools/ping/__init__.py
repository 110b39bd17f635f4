"""ping (iputils): ICMP round-trip times.

May import: what netrun.tools may import.
"""
