"""A real Kubernetes cluster on the emulated lab: the control plane as processes beside
the lab, and on every lab host its own containerd and kubelet (netrun.lab.k8s.cluster)."""
