"""Rendering a saved run: tables, HTML page, exporters, diffs.

May import: netrun.history and below.
"""
