"""netrun: an Ansible-style runner for network benchmarks across many hosts."""

from __future__ import annotations

__version__ = "0.1.0"
