"""Kubernetes harness for the execute stage's tests: a real etcd and kube-apiserver, built and started locally."""
