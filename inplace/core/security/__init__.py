"""Credentials every role shares: a local CA, TLS serving, kubeconfig files (issue 17)."""
