"""vLLM's Prometheus /metrics text, parsed with prometheus_client's own parser: the few series the
watcher reads, summed over engines, and the cache's configuration. Text in, values out: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families


@dataclass(frozen=True)
class VllmMetrics:
    """One scrape of vLLM's /metrics (sums over engines)."""

    kv_usage: float  # vllm:kv_cache_usage_perc: blocks held by requests / blocks in the pool (0..1)
    prefix_queries: float  # vllm:prefix_cache_queries_total: prompt tokens looked up in the cache
    prefix_hits: float  # vllm:prefix_cache_hits_total: of those, tokens found cached
    preemptions: float  # vllm:num_preemptions_total
    running: float  # vllm:num_requests_running
    waiting: float  # vllm:num_requests_waiting
    num_blocks: int | None  # vllm:cache_config_info{num_gpu_blocks}: blocks in the pool
    block_size: int | None  # vllm:cache_config_info{block_size}
    hash_algo: str | None  # vllm:cache_config_info{prefix_caching_hash_algo}
    start_time: float | None  # process_start_time_seconds: changes when the server restarts

    @property
    def hit_rate(self) -> float:
        return self.prefix_hits / self.prefix_queries if self.prefix_queries else 0.0


# The series parse_metrics reads: a recording keeps only these lines of each scrape.
SERIES_READ = ("vllm:kv_cache_usage_perc", "vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total",
               "vllm:num_preemptions_total", "vllm:num_requests_running", "vllm:num_requests_waiting",
               "vllm:cache_config_info", "process_start_time_seconds")


def series_read(text: str) -> str:
    """The lines of a /metrics text that parse_metrics reads (with their HELP and TYPE lines)."""
    keep = []
    for line in text.splitlines():
        if line.startswith("# "):
            parts = line.split(" ", 3)
            name = parts[2] if len(parts) > 2 else ""
            if name in SERIES_READ or f"{name}_total" in SERIES_READ:
                keep.append(line)
        elif line.split("{", 1)[0].split(" ", 1)[0] in SERIES_READ:
            keep.append(line)
    return "\n".join(keep) + "\n"


def _int(label: str | None) -> int | None:
    try:
        return int(label) if label is not None and label != "None" else None
    except ValueError:
        return None


def parse_metrics(text: str) -> VllmMetrics:
    """vLLM's Prometheus text -> VllmMetrics. Missing series read as 0 (or None for config)."""
    sums: dict[str, float] = {}
    info: dict[str, str] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == "vllm:cache_config_info":
                info = dict(s.labels)
            elif s.name.startswith("vllm:") or s.name == "process_start_time_seconds":
                sums[s.name] = sums.get(s.name, 0.0) + s.value
    return VllmMetrics(
        kv_usage=sums.get("vllm:kv_cache_usage_perc", 0.0),
        prefix_queries=sums.get("vllm:prefix_cache_queries_total", 0.0),
        prefix_hits=sums.get("vllm:prefix_cache_hits_total", 0.0),
        preemptions=sums.get("vllm:num_preemptions_total", 0.0),
        running=sums.get("vllm:num_requests_running", 0.0),
        waiting=sums.get("vllm:num_requests_waiting", 0.0),
        num_blocks=_int(info.get("num_gpu_blocks")),
        block_size=_int(info.get("block_size")),
        hash_algo=info.get("prefix_caching_hash_algo"),
        start_time=sums.get("process_start_time_seconds"),
    )
