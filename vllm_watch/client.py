"""Talking to a vLLM server over HTTP: its OpenAI completions endpoint, its model list and its
Prometheus `/metrics` (parsed in metrics.py). No threads here: each call answers or raises.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

from vllm_watch.metrics import VllmMetrics, parse_metrics

TIMEOUT_S = 5.0  # /metrics and /v1/models: a server that takes longer is reported as not answering
COMPLETION_TIMEOUT_S = 120.0  # a completion on a busy CPU server can take a while


def _get(url: str, timeout: float) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as r:
        body: bytes = r.read()
        return body


def metrics_text(base_url: str, timeout: float = TIMEOUT_S) -> str:
    """vLLM's /metrics as text. Raises OSError (URLError, timeouts, refused connections) when the
    server does not answer."""
    return _get(f"{base_url}/metrics", timeout).decode("utf-8", "replace")


def fetch_metrics(base_url: str, timeout: float = TIMEOUT_S) -> VllmMetrics:
    """Raises OSError (URLError, timeouts, refused connections) when the server does not answer."""
    return parse_metrics(metrics_text(base_url, timeout))


def served_model(base_url: str, timeout: float = TIMEOUT_S) -> str:
    """The id of the (first) model the server serves."""
    return str(json.loads(_get(f"{base_url}/v1/models", timeout))["data"][0]["id"])


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
            out: dict[str, Any] = json.load(r)
    except urllib.error.HTTPError as e:
        detail = e.read().decode("utf-8", "replace")[:300]
        raise ValueError(f"vLLM refused the request (HTTP {e.code}): {detail}") from None
    choice, usage = out["choices"][0], out.get("usage") or {}
    details = usage.get("prompt_tokens_details") or {}
    return Completion(tuple(choice.get("prompt_token_ids") or ()), tuple(choice.get("token_ids") or ()),
                      choice.get("text", ""), details.get("cached_tokens"))
