"""The run history (SQLite), baselines and regression verdicts.

May import: netrun.run and below.
"""
