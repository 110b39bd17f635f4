"""Reading a scenario file: loading, validating, generated pairs.

May import: netrun.modes and below.
"""
