"""The nouns every layer carries, pure: a test's spec, options, metrics,
MTU plans, line rates, numbers and the safe YAML reader.

May import: netrun.errors only.
"""
