"""netrun: an Ansible-style runner for network benchmarks across many hosts.

The packages, bottom up (each imports only those below it; .importlinter enforces it):
errors < core < results < hosts < inventory < cleanup < tools < modes < scenario < run <
history < report < publish < job < cli; lab and testing stand apart.
"""

from __future__ import annotations

__version__ = "0.1.0"
