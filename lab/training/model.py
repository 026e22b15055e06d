"""The multi-task model: one MiniLM encoder, a token head and two sequence heads."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

HIDDEN = 384


class SequenceHead(nn.Module):
    """Mean-pooled encoder states -> dense + tanh -> logits (same as the runtime head)."""

    def __init__(self, num_labels: int, hidden: int = HIDDEN) -> None:
        super().__init__()
        self.dense = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, num_labels)
        self.dropout = nn.Dropout(0.1)

    def forward(self, states: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        m = mask.unsqueeze(-1).to(states.dtype)
        pooled = (states * m).sum(1) / m.sum(1).clamp(min=1.0)
        return self.out(self.dropout(torch.tanh(self.dense(self.dropout(pooled)))))


class MultiTask(nn.Module):
    def __init__(self, token_model: Any) -> None:
        super().__init__()
        self.token_model = token_model
        self.nli = SequenceHead(3)
        self.prompt = SequenceHead(2)

    def encode(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        out = self.token_model.bert(input_ids=input_ids, attention_mask=attention_mask)
        return out.last_hidden_state

    def heads_state(self) -> dict[str, torch.Tensor]:
        state = {f"nli.{k}": v for k, v in self.nli.state_dict().items()}
        state.update({f"prompt.{k}": v for k, v in self.prompt.state_dict().items()})
        return state
