"""kvviz: the KV-cache lesson's state, views and text, driven by the engine."""
