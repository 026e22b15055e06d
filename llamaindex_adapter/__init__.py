"""LlamaIndex integration (needs the ``llamaindex`` extra)."""
