"""The service's policy: the file with its ``service`` fields replaced, validated.

Apart from the application (``_app``, which needs Ray) and the runner (``_runner``), which
both read it: a bad option is refused before anything starts.
"""

from __future__ import annotations

import os
from typing import Unpack

from truthlens_integrations.core import ConfigError
from truthlens_integrations.core._adapter_api import ServiceKwargs
from truthlens_integrations.core.policy import Policy, PolicySource, load_policy

__all__ = ["resolved_policy"]


def resolved_policy(
    policy: PolicySource,
    *,
    host: str | None = None,
    port: int | None = None,
    **overrides: Unpack[ServiceKwargs],
) -> Policy:
    """The policy with ``host``, ``port`` and other ``service`` fields replaced, validated.

    Raises:
        ConfigError: For an unknown field or a bad value (``replicas=0``,
            ``port=70000``), naming it; raised before anything starts.
    """
    loaded = load_policy(policy)
    fields = {"host": host, "port": port, **overrides}
    fields = {key: value for key, value in fields.items() if value is not None}
    if not fields:
        return loaded
    data = loaded.model_dump(mode="json", by_alias=True, exclude_defaults=True)
    data["service"] = {**data.get("service", {}), **fields}
    try:
        return load_policy(data)
    except ConfigError as exc:
        # The loader names a dict source "<dict>"; what was wrong is the file with these
        # options, and the message says so.
        problem = str(exc).removeprefix("<dict>: ")
        given = ", ".join(f"{key}={value!r}" for key, value in fields.items())
        raise ConfigError(f"{_named(policy)} with the service options {given}: {problem}") from None


def _named(policy: PolicySource) -> str:
    """How an error names the policy the options were applied to: its file, where it has one."""
    if policy is None:
        return "the built-in policy"
    if isinstance(policy, os.PathLike):
        return str(policy)
    if isinstance(policy, str) and "\n" not in policy and len(policy) <= _NAME_CHARS:
        return policy
    return "the policy"


#: A one-line policy source longer than this is text, not a file name worth quoting.
_NAME_CHARS = 300
