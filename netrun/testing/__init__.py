"""Helpers for users' and netrun's own tests (a recording transport).

May import: netrun.hosts and netrun.errors.
"""
