"""Adaptive mode selection by Thompson sampling."""

from __future__ import annotations

import random
import threading
from collections.abc import Sequence

from .._errors import ConfigError
from ._fields import Mode

__all__ = ["ModeSelector"]

_ALL_MODES: tuple[Mode, ...] = ("lightweight", "standard", "premium")
_NO_DECISION = "<default>"


class ModeSelector:
    """Picks a mode per decision by Thompson sampling over Beta posteriors.

    Each (decision, mode) arm keeps ``Beta(alpha, beta)`` over its success rate
    (success: e.g. no negative user feedback). :meth:`select` draws one sample per
    mode and returns the mode with the largest; :meth:`feedback` updates the arm.
    Safe to share between threads; seed it for reproducible choices.

    Args:
        modes: Candidate modes.
        prior_alpha: Prior successes of every arm.
        prior_beta: Prior failures of every arm.
        seed: Seed of the private random generator.

    Raises:
        ConfigError: If ``modes`` is empty or a prior is not positive.
    """

    def __init__(
        self,
        modes: Sequence[Mode] = _ALL_MODES,
        *,
        prior_alpha: float = 1.0,
        prior_beta: float = 1.0,
        seed: int | None = None,
    ) -> None:
        if not modes:
            raise ConfigError("ModeSelector needs at least one mode")
        unknown = [m for m in modes if m not in _ALL_MODES]
        if unknown:
            raise ConfigError(f"unknown modes {unknown}; use {list(_ALL_MODES)}")
        if prior_alpha <= 0 or prior_beta <= 0:
            raise ConfigError("Beta priors must be positive")
        self.modes: tuple[Mode, ...] = tuple(dict.fromkeys(modes))
        self._prior = (float(prior_alpha), float(prior_beta))
        self._arms: dict[tuple[str, Mode], list[float]] = {}
        self._rng = random.Random(seed)
        self._lock = threading.Lock()

    def _arm(self, decision: str | None, mode: Mode) -> list[float]:
        key = (decision or _NO_DECISION, mode)
        arm = self._arms.get(key)
        if arm is None:
            arm = self._arms[key] = list(self._prior)
        return arm

    def select(self, decision: str | None) -> Mode:
        """Sample every mode's posterior for ``decision`` and return the best draw.

        Args:
            decision: Decision name, or ``None`` for requests no decision matched.

        Returns:
            The chosen mode.
        """
        with self._lock:
            draws = {mode: self._rng.betavariate(*self._arm(decision, mode)) for mode in self.modes}
        return max(draws, key=lambda m: draws[m])

    def feedback(self, decision: str | None, mode: Mode, success: bool) -> None:
        """Record whether an answer served in ``mode`` under ``decision`` went well.

        Raises:
            ConfigError: If ``mode`` is not one of the selector's modes.
        """
        if mode not in self.modes:
            raise ConfigError(f"mode {mode!r} is not one of {list(self.modes)}")
        with self._lock:
            arm = self._arm(decision, mode)
            arm[0 if success else 1] += 1.0

    def posterior(self, decision: str | None, mode: Mode) -> tuple[float, float]:
        """Current ``(alpha, beta)`` of an arm."""
        with self._lock:
            alpha, beta = self._arm(decision, mode)
        return alpha, beta

    def expected_success(self, decision: str | None, mode: Mode) -> float:
        """Posterior mean success rate of an arm."""
        alpha, beta = self.posterior(decision, mode)
        return alpha / (alpha + beta)
