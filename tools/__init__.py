"""Programs run beside the lesson, not inside it: training the model and exporting it for vLLM,
launching a real vLLM, and serving the lesson on a free port for the browser tests and benchmarks."""
