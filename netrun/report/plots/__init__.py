"""The plots of a run and of its history, as PNG files.

May import: netrun.report's other modules and what they may import.
"""
