"""LangChain integration (needs the ``langchain`` extra)."""
