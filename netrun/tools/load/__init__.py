"""Latency under load: a latency test's ``load:`` (a bulk iperf3 flow on the same pair and
path) and the measurement that runs the test's tool idle, then loaded (netrun.tools.load.tool).

May import: netrun.tools' own tool packages below it (iperf3) and the layers below tools;
never a latency tool's package (ping, netperf and iperf2 import this one's ``spec``).
"""
