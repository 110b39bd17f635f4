"""netperf (HPE): request/response latency with percentiles (TCP_RR, UDP_RR, TCP_CRR) and
TCP_STREAM throughput, the netserver started and stopped by netrun for each repeat.

May import: what netrun.tools may import.
"""
