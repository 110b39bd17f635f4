"""The container modes' family: Docker, and Docker on a Flannel overlay,
with the helpers that start, keep, arm and sweep containers.

May import: netrun.modes.base and below (netrun.tools.savers among them); its
savers (netrun.modes.docker.savers) build on its launch and path-bytes modules.
"""
