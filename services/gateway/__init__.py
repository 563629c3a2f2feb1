"""The gateway: Kubernetes REST over HTTPS, in front of the registry."""
