"""Default prompts of the guarded query engine, as LlamaIndex prompt templates.

Users replace them the LlamaIndex way::

    guarded.update_prompts({"refine_prompt": PromptTemplate("...")})
"""

from __future__ import annotations

from llama_index.core.prompts import PromptTemplate
from llama_index.core.prompts.prompt_type import PromptType

__all__ = ["DEFAULT_QUERY_REWRITE_PROMPT", "DEFAULT_REFINE_PROMPT"]

DEFAULT_REFINE_PROMPT = PromptTemplate(
    "Context information is below.\n"
    "---------------------\n"
    "{context_str}\n"
    "---------------------\n"
    "Question: {query_str}\n"
    "A previous answer was:\n"
    "{answer}\n"
    "These parts of it are not supported by the context:\n"
    "{spans}\n"
    "Rewrite the answer so that every statement is supported by the context. Correct "
    "or remove the unsupported parts and keep everything else. If the context does "
    "not contain the answer, say so.\n"
    "Answer: ",
    prompt_type=PromptType.REFINE,
)

DEFAULT_QUERY_REWRITE_PROMPT = PromptTemplate(
    "A search for the question below returned passages that did not support these "
    "parts of the answer:\n"
    "{spans}\n"
    "Question: {query_str}\n"
    "Write one search query that would find passages about the unsupported facts. "
    "Return only the query.\n"
    "Query: ",
    prompt_type=PromptType.CUSTOM,
)
