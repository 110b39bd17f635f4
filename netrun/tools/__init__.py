"""Tools netrun drives on hosts: each module builds a command and parses its output.

A tool never runs anything itself; the caller joins the argv with ``shlex.join`` (or sends a
script made here) through ``Host.run`` and hands the text back to the tool's parser.
"""

from __future__ import annotations
