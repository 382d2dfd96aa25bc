"""Watching a running vLLM: its KV events over ZeroMQ and its Prometheus /metrics, decoded into an
immutable picture of its prefix cache. No Panel, nothing of the lesson: node 04 (kvviz/nodes/vllm/)
is one user, the launcher tools/vllm_server.py and benchmarks/vs_vllm.py others. One job a module:

    defaults    the vLLM kvviz serves (model name, block size, pool, endpoints): standard library only
    wire        KV-event messages decoded; vLLM's block hashes recomputed
    cache_tree  the prefix cache rebuilt from those events
    metrics     one /metrics scrape parsed
    client      HTTP to the server: /metrics, /v1/models, a completion
    snapshot    what the watcher publishes (immutable)
    monitor     the watcher: one thread, one subscription, a scrape a second, gaps replayed
    recording   a recorded session's file format, checked
    playback    a recording played through the watcher's own code
    recorder    the watcher, keeping every message and scrape it reads

Importing this package imports none of them (the launcher imports `defaults` with any Python).
"""
