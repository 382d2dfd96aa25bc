"""Paged KV-cache kernels: Triton implementations and their plain-torch references."""
