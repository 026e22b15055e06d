"""Build tiny LettuceDetect-format models locally, so tests never touch the hub.

``build_tiny_model`` makes randomly initialised (seeded) BERT and ModernBERT token
classifiers with tokenizers trained here. ``build_keyword_model`` makes a BERT whose
output is known in advance: with no transformer layers and a classifier aimed at a
few word embeddings, it flags exactly those words, which lets tests check offsets,
span merging and CLI output against values worked out by hand.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import torch
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
from tokenizers.trainers import BpeTrainer, WordPieceTrainer
from transformers import (
    AutoModelForTokenClassification,
    BertConfig,
    ModernBertConfig,
    PreTrainedTokenizerFast,
)

from truthlens_integrations.core.models.detection._prompt import format_prompt

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = [
    "paris",
    "london",
    "rome",
    "berlin",
    "tower",
    "bridge",
    "museum",
    "river",
    "castle",
    "garden",
    "red",
    "blue",
    "green",
    "white",
    "black",
    "tall",
    "short",
    "old",
    "new",
    "large",
    "built",
    "opened",
    "designed",
    "painted",
    "visited",
    "owned",
    "sold",
    "moved",
    "alice",
    "bob",
    "carol",
    "dave",
    "erin",
    "frank",
    "grace",
    "heidi",
    "ivan",
    "judy",
    "1887",
    "1889",
    "1950",
    "1920",
    "330",
    "500",
    "2400",
    "42",
    "7",
    "12",
    "meters",
    "the",
    "was",
    "is",
    "and",
    "in",
    "it",
    "tall",
    "when",
    "where",
    "who",
    "what",
    "built",
]


def _corpus() -> list[str]:
    rng = random.Random(0)
    template = format_prompt(["x y"], "what was it?") + format_prompt(["x"], None)
    lines = [template] * 20
    lines += [" ".join(rng.choices(WORDS, k=12)) + "." for _ in range(400)]
    return lines


def _pair_template(tok: Tokenizer) -> processors.TemplateProcessing:
    """BERT's ``[CLS] A [SEP] B [SEP]`` layout, the second segment typed 1."""
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    return processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls), ("[SEP]", sep)],
    )


def _fast(tok: Tokenizer, input_names: list[str]) -> PreTrainedTokenizerFast:
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
        model_input_names=input_names,
    )


def sizes(
    tokenizer: PreTrainedTokenizerFast,
    *,
    hidden: int,
    layers: int,
    heads: int,
    ffn: int,
    positions: int,
) -> dict[str, int]:
    """The size fields of a tiny transformer config over ``tokenizer``'s vocabulary."""
    return {
        "vocab_size": len(tokenizer),
        "hidden_size": hidden,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "intermediate_size": ffn,
        "max_position_embeddings": positions,
    }


def build_wordpiece_tokenizer() -> PreTrainedTokenizerFast:
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.train_from_iterator(_corpus(), WordPieceTrainer(vocab_size=400, special_tokens=SPECIALS))
    tok.post_processor = _pair_template(tok)
    tok.decoder = decoders.WordPiece()
    return _fast(tok, ["input_ids", "token_type_ids", "attention_mask"])


def build_bpe_tokenizer() -> PreTrainedTokenizerFast:
    tok = Tokenizer(models.BPE(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.train_from_iterator(
        _corpus(),
        BpeTrainer(
            vocab_size=500,
            special_tokens=SPECIALS,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        ),
    )
    tok.post_processor = processors.Sequence(
        [processors.ByteLevel(trim_offsets=True), _pair_template(tok)]
    )
    tok.decoder = decoders.ByteLevel()
    return _fast(tok, ["input_ids", "attention_mask"])


def build_tiny_model(kind: str, directory: Path) -> Path:
    """Create and save a seeded, untrained tiny ``bert`` or ``modernbert`` detector."""
    torch.manual_seed(0)
    if kind == "bert":
        tokenizer = build_wordpiece_tokenizer()
        config = BertConfig(
            **sizes(tokenizer, hidden=48, layers=2, heads=2, ffn=96, positions=160), num_labels=2
        )
    else:
        tokenizer = build_bpe_tokenizer()
        config = ModernBertConfig(
            **sizes(tokenizer, hidden=48, layers=2, heads=2, ffn=96, positions=512),
            pad_token_id=tokenizer.pad_token_id,
            bos_token_id=tokenizer.cls_token_id,
            eos_token_id=tokenizer.sep_token_id,
            cls_token_id=tokenizer.cls_token_id,
            sep_token_id=tokenizer.sep_token_id,
            num_labels=2,
            attn_implementation="eager",
        )
    config.id2label = {0: "supported", 1: "hallucinated"}
    config.label2id = {"supported": 0, "hallucinated": 1}
    model = AutoModelForTokenClassification.from_config(config)
    tokenizer.model_max_length = config.max_position_embeddings
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def build_keyword_model(directory: Path, flagged: Iterable[str]) -> Path:
    """A BERT detector that flags exactly the answer tokens in ``flagged``."""
    torch.manual_seed(0)
    tokenizer = build_wordpiece_tokenizer()
    config = BertConfig(
        **sizes(tokenizer, hidden=64, layers=0, heads=1, ffn=64, positions=160),
        num_labels=2,
        hidden_dropout_prob=0.0,
    )
    model = AutoModelForTokenClassification.from_config(config)
    with torch.no_grad():
        emb = model.bert.embeddings
        emb.position_embeddings.weight.zero_()
        emb.token_type_embeddings.weight.zero_()
        words = emb.word_embeddings.weight
        words.copy_(torch.nn.functional.normalize(torch.randn_like(words), dim=-1) * 8)
        # Two reserved dimensions mark the flagged words (+8, -8 keeps their mean at 0,
        # so LayerNorm leaves the mark intact); the classifier reads only dimension 0.
        words[:, :2] = 0.0
        for word in flagged:
            words[tokenizer.convert_tokens_to_ids(word), :2] = torch.tensor([8.0, -8.0])
        model.classifier.weight.zero_()
        model.classifier.weight[1, 0] = 2.0
        model.classifier.bias.copy_(torch.tensor([0.0, -4.0]))
    model.save_pretrained(directory)
    tokenizer.model_max_length = config.max_position_embeddings
    tokenizer.save_pretrained(directory)
    return directory


def build_nli_model(folder: Path, id2label: dict[int, str], bias: list[float]) -> Path:
    """A tiny BERT NLI classifier whose output is fixed by its classifier bias."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    tokenizer = build_wordpiece_tokenizer()
    config = BertConfig(
        **sizes(tokenizer, hidden=32, layers=1, heads=2, ffn=64, positions=128),
        num_labels=len(id2label),
        id2label=id2label,
        label2id={v: k for k, v in id2label.items()},
    )
    torch.manual_seed(0)
    model = BertForSequenceClassification(config)
    with torch.no_grad():
        model.classifier.weight.zero_()
        model.classifier.bias.copy_(torch.tensor(bias))
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


T5_SPECIALS = ["<pad>", "</s>", "<unk>"]
# Weights drawn 15 times wider than a real model's (0.02), so an untrained classifier's
# probabilities differ visibly from one input to the next.
_WIDE_INIT = 0.3


def build_t5_tokenizer() -> PreTrainedTokenizerFast:
    """A BPE tokenizer in T5's layout: ``A </s>`` and ``A </s> B </s>``, padded with <pad>."""
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.train_from_iterator(_corpus(), BpeTrainer(vocab_size=400, special_tokens=T5_SPECIALS))
    eos = tok.token_to_id("</s>")
    tok.post_processor = processors.TemplateProcessing(
        single="$A </s>", pair="$A </s> $B </s>", special_tokens=[("</s>", eos)]
    )
    tok.decoder = decoders.Metaspace()
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="<unk>",
        pad_token="<pad>",
        eos_token="</s>",
        model_input_names=["input_ids", "attention_mask"],
    )


def _sequence_config(kind: str, labels: int) -> tuple[PreTrainedTokenizerFast, Any]:
    """A tokenizer and the config of a tiny ``roberta``, ``deberta-v2`` or ``t5`` classifier."""
    from transformers import DebertaV2Config, RobertaConfig, T5Config

    if kind == "roberta":
        tokenizer = build_bpe_tokenizer()
        # RoBERTa's positions start after the padding index: 130 rows read 129 tokens.
        return tokenizer, RobertaConfig(
            **sizes(tokenizer, hidden=32, layers=1, heads=2, ffn=64, positions=130),
            pad_token_id=tokenizer.pad_token_id,
            bos_token_id=tokenizer.cls_token_id,
            eos_token_id=tokenizer.sep_token_id,
            type_vocab_size=1,
            num_labels=labels,
            initializer_range=_WIDE_INIT,
        )
    if kind == "deberta-v2":
        tokenizer = build_wordpiece_tokenizer()
        return tokenizer, DebertaV2Config(
            **sizes(tokenizer, hidden=32, layers=1, heads=2, ffn=64, positions=128),
            pad_token_id=tokenizer.pad_token_id,
            type_vocab_size=0,
            num_labels=labels,
            initializer_range=_WIDE_INIT,
        )
    if kind == "t5":
        tokenizer = build_t5_tokenizer()
        tokenizer.model_max_length = 128  # T5 has no position table: the tokenizer says
        return tokenizer, T5Config(
            vocab_size=len(tokenizer),
            d_model=32,
            d_kv=16,
            d_ff=64,
            num_layers=1,
            num_decoder_layers=1,
            num_heads=2,
            pad_token_id=tokenizer.pad_token_id,
            eos_token_id=tokenizer.eos_token_id,
            decoder_start_token_id=tokenizer.pad_token_id,
            num_labels=labels,
            initializer_factor=_WIDE_INIT * 20,
        )
    raise ValueError(f"unknown kind {kind!r}")


def build_sequence_classifier(
    kind: str,
    folder: Path,
    id2label: dict[int, str],
    *,
    bias: list[float] | None = None,
) -> Path:
    """A seeded tiny ``roberta``, ``deberta-v2`` or ``t5`` sequence classifier.

    Untrained, its output depends on the input; with ``bias`` the last layer reads
    nothing else, so every input gets exactly those logits.
    """
    from transformers import AutoModelForSequenceClassification

    tokenizer, config = _sequence_config(kind, len(id2label))
    config.id2label = dict(id2label)
    config.label2id = {name: index for index, name in id2label.items()}
    torch.manual_seed(0)
    model = AutoModelForSequenceClassification.from_config(config)
    if bias is not None:
        head = {
            "roberta": lambda: model.classifier.out_proj,
            "deberta-v2": lambda: model.classifier,
            "t5": lambda: model.classification_head.out_proj,
        }[kind]()
        with torch.no_grad():
            head.weight.zero_()
            head.bias.copy_(torch.tensor(bias))
    if kind != "t5":
        tokenizer.model_max_length = config.max_position_embeddings - (kind == "roberta")
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
