"""Kubernetes: a test's ends in pods pinned to named nodes, measured through ``kubectl exec``.

The inventory maps each host to a node (``netrun_k8s_node``, default the host's name); the
host runs kubectl (its ``kubeconfig`` and ``kube_context``, or its ``KUBECONFIG``), so a
host with ``ansible_connection: local`` is kubectl from the controller. Each test gets a
namespace of its own, labelled with the run's id, deleted by an undo record written
before it is made.

May import: netrun.modes.base and below.
"""
