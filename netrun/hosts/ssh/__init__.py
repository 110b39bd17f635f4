"""The SSH transport's parts: channels, host keys, and why a connection
failed, in words a user can act on.

May import: netrun.hosts' other modules and what they may import.
"""
