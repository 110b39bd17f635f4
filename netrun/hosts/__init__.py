"""Reaching a host: the Host, the commands sent to it, its transports
(SSH, local), running a step on many hosts, its processes and its clock.

May import: netrun.results, netrun.core, netrun.errors.
"""
