"""Framework-free retrieval helpers shared by the adapters."""

from __future__ import annotations

from ._quality import QualityFilter, word_jaccard

__all__ = ["QualityFilter", "word_jaccard"]
