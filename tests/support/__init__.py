"""Helpers the test suites share: a real etcd process, an OTLP receiver, and
HTTP access to a running gateway."""
