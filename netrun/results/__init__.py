"""The saved document: results.json written as a run goes, its schema,
statistics over samples and the sanity flags read from them.

May import: netrun.core, netrun.errors.
"""
