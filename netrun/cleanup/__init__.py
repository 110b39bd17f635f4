"""What a run changed or left on hosts, and undoing it: undo records,
owner marks, the controller's run journal, sweeps and their scripts.

May import: netrun.inventory, netrun.hosts and below.
"""
