"""The guarded query engine's refine and query-rewrite prompts, as LlamaIndex templates.

Users replace them the LlamaIndex way::

    guarded.update_prompts({"refine_prompt": PromptTemplate("...{context_str}...")})

The templates are the user part of the engine's prompts; the engine's system message
(which tells the model that context text is data, never instructions, and for the
query rewrite that the reply must be JSON) is always kept in front, unless a chat
template brings its own system message. Every value filled in is defused by the
engine's :func:`~truthlens_integrations.core.mitigation._prompts.defuse`, so a retrieved
passage cannot close a tag and pose as instructions.

Refine template variables: ``context_str`` (the numbered documents), ``query_str``,
``answer`` (with the flagged parts marked ``[[like this]]``) and ``spans`` (one line
per flagged part). Query-rewrite variables: ``query_str`` (the user's question),
``last_query`` and ``spans`` (the unsupported statements).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from llama_index.core.base.llms.types import MessageRole
from llama_index.core.prompts import BasePromptTemplate, PromptTemplate
from llama_index.core.prompts.prompt_type import PromptType

from truthlens_integrations.core import ConfigError, HallucinationSpan
from truthlens_integrations.core._adapter_api import (
    build_refine_messages,
    build_refiner_messages,
    defuse,
    format_documents,
    mark_spans,
)
from truthlens_integrations.core.llm import ChatMessage

__all__ = [
    "DEFAULT_QUERY_REWRITE_PROMPT",
    "DEFAULT_REFINE_PROMPT",
    "QUERY_REWRITE_VARIABLES",
    "REFINE_VARIABLES",
    "check_template",
    "refine_builder",
    "rewrite_builder",
]

REFINE_VARIABLES = frozenset({"context_str", "query_str", "answer", "spans"})
QUERY_REWRITE_VARIABLES = frozenset({"query_str", "last_query", "spans"})

DEFAULT_REFINE_PROMPT = PromptTemplate(
    "{context_str}\n\n"
    "<question>\n{query_str}\n</question>\n\n"
    "<answer>\n{answer}\n</answer>\n\n"
    "Flagged parts:\n{spans}\n\n"
    "Some parts of the answer are marked [[like this]]; a checker found them unsupported.\n"
    "For each marked part:\n"
    "1. Check it against the context.\n"
    "2. If the context contradicts it, replace it with what the context says.\n"
    "3. If the context does not mention it, remove it or say that it cannot be verified.\n"
    "Keep every accurate part of the answer. Keep the text coherent and answer the question.\n"
    "Do not invent replacements: use only facts stated in the context.\n\n"
    "Corrected answer:",
    prompt_type=PromptType.REFINE,
)

DEFAULT_QUERY_REWRITE_PROMPT = PromptTemplate(
    "<question>\n{query_str}\n</question>\n\n"
    "Last search query: {last_query}\n\n"
    "The retrieved documents did not support these statements of the answer:\n{spans}\n\n"
    "Write a better search query that would find documents confirming or refuting them. "
    "JSON only.",
    prompt_type=PromptType.CUSTOM,
)

_ROLES = {MessageRole.SYSTEM: "system", MessageRole.ASSISTANT: "assistant"}


def check_template(name: str, template: BasePromptTemplate, allowed: frozenset[str]) -> None:
    """Refuse a template that asks for variables the engine cannot fill.

    Raises:
        ConfigError: Naming the unknown variables and the allowed ones.
    """
    unknown = set(getattr(template, "template_vars", ())) - allowed
    if unknown:
        raise ConfigError(
            f"{name} uses {sorted(unknown)}, which the engine does not fill; "
            f"available: {sorted(allowed)}"
        )


def _messages(
    template: BasePromptTemplate, system: ChatMessage, values: dict[str, str]
) -> list[ChatMessage]:
    rendered = template.format_messages(llm=None, **values)
    out = [
        ChatMessage(role=_ROLES.get(m.role, "user"), content=m.content or "")  # type: ignore[arg-type]
        for m in rendered
    ]
    if not any(m.role == "system" for m in out):
        out.insert(0, system)
    return out


def _flagged(spans: Sequence[HallucinationSpan]) -> str:
    lines = []
    for i, span in enumerate(spans, start=1):
        label = f"; NLI: {span.nli_label}" if span.nli_label else ""
        lines.append(
            f'{i}. "{defuse(span.text.strip())}" (confidence {span.confidence:.2f}{label})'
        )
    # A calibrated score can flag an answer without singling out a part of it.
    return "\n".join(lines) or "(no single part: the answer as a whole is likely not supported)"


def refine_builder(template: BasePromptTemplate) -> Callable[..., list[ChatMessage]]:
    """The engine's ``refine_messages`` hook, rendering ``template``."""
    system = build_refine_messages(context=(), question=None, answer="-", spans=())[0]

    def build(
        *,
        context: Sequence[str],
        question: str | None,
        answer: str,
        spans: Sequence[HallucinationSpan],
        **_: Any,
    ) -> list[ChatMessage]:
        values = {
            "context_str": format_documents(context),
            "query_str": defuse(question or "(none)"),
            "answer": defuse(mark_spans(answer, spans)),
            "spans": _flagged(spans),
        }
        return _messages(template, system, values)

    return build


def rewrite_builder(template: BasePromptTemplate) -> Callable[..., list[ChatMessage]]:
    """The engine's ``refiner_messages`` hook (query rewrite), rendering ``template``."""
    system = build_refiner_messages(question=None, query="-", unsupported=())[0]

    def build(
        *,
        question: str | None,
        query: str,
        unsupported: Sequence[HallucinationSpan],
        **_: Any,
    ) -> list[ChatMessage]:
        claims = "\n".join(f"- {defuse(s.text.strip())}" for s in unsupported) or "- (none)"
        values = {
            "query_str": defuse(question or "(none)"),
            "last_query": defuse(query),
            "spans": claims,
        }
        return _messages(template, system, values)

    return build
