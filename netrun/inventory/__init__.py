"""Ansible inventories in every form Ansible reads them, resolved into Hosts.

YAML, INI, `ansible-inventory --list` JSON, executable inventory scripts and directories of
them, merged in Ansible's order with Ansible's variable precedence (see loader). Every
problem is reported at once, one line each, naming the file (and line), host or group, key.

The model (model.py) is kept apart from the sources that fill it (*_source.py), as
Ansible does. May import: netrun.hosts, netrun.core, netrun.errors.
"""
