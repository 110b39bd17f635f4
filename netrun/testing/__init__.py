"""Helpers for users' and netrun's own tests: a recording transport (recording.py) and
one whose hosts answer each part of a command with captured output (scripted.py).

May import: netrun.hosts and netrun.errors.
"""
