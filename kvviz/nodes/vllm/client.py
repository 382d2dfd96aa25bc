"""Talking to a vLLM server over HTTP: its OpenAI completions endpoint, its model list and its
Prometheus `/metrics` (parsed with prometheus_client's own parser). No Panel, no threads here.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families

TIMEOUT_S = 5.0  # /metrics and /v1/models: a server that takes longer is reported as not answering
COMPLETION_TIMEOUT_S = 120.0  # a completion on a busy CPU server can take a while


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
        return int(label) if label not in (None, "None") else None
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


def _get(url: str, timeout: float) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read()


def metrics_text(base_url: str, timeout: float = TIMEOUT_S) -> str:
    """vLLM's /metrics as text. Raises OSError (URLError, timeouts, refused connections) when the
    server does not answer."""
    return _get(f"{base_url}/metrics", timeout).decode("utf-8", "replace")


def fetch_metrics(base_url: str, timeout: float = TIMEOUT_S) -> VllmMetrics:
    """Raises OSError (URLError, timeouts, refused connections) when the server does not answer."""
    return parse_metrics(metrics_text(base_url, timeout))


def served_model(base_url: str, timeout: float = TIMEOUT_S) -> str:
    """The id of the (first) model the server serves."""
    return json.loads(_get(f"{base_url}/v1/models", timeout))["data"][0]["id"]


@dataclass(frozen=True)
class Completion:
    prompt_token_ids: tuple[int, ...]
    token_ids: tuple[int, ...]  # the generated tokens
    text: str
    cached_tokens: int | None  # prompt tokens vLLM found in its prefix cache (None: not reported)


def complete(base_url: str, model: str, prompt: str, max_tokens: int,
             timeout: float = COMPLETION_TIMEOUT_S) -> Completion:
    """A greedy completion of exactly `max_tokens` tokens. Raises OSError when the server does
    not answer and ValueError when it refuses (its message, shortened)."""
    body = json.dumps({"model": model, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0,
                       "ignore_eos": True, "return_token_ids": True}).encode()
    req = urllib.request.Request(f"{base_url}/v1/completions", body, {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            out = json.load(r)
    except urllib.error.HTTPError as e:
        detail = e.read().decode("utf-8", "replace")[:300]
        raise ValueError(f"vLLM refused the request (HTTP {e.code}): {detail}") from None
    choice, usage = out["choices"][0], out.get("usage") or {}
    details = usage.get("prompt_tokens_details") or {}
    return Completion(tuple(choice.get("prompt_token_ids") or ()), tuple(choice.get("token_ids") or ()),
                      choice.get("text", ""), details.get("cached_tokens"))
