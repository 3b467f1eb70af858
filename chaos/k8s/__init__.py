"""Chaos activities against Kubernetes through the `kubernetes` client: pod delete, evict, cordon, drain."""
