"""Real-output training data and the generated hard cases: labels line up with the text they mark.

The converter tests read ``../shared/benchdata`` (or ``$TRUTHLENS_BENCHDATA``) and skip when it is
absent; the pure-function and hard-case tests need nothing but the repository.
"""

from __future__ import annotations

import csv
import json
import re
import sys
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # lab/training/ is a repo folder, not an installed package
    sys.path.insert(0, str(ROOT))

from lab.training import hardcases, realdata  # noqa: E402
from lab.training.realdata import Claim  # noqa: E402

BENCH = realdata._root(None)
needs_bench = pytest.mark.skipif(
    not BENCH.is_dir(), reason=f"benchdata not found at {BENCH} (set $TRUTHLENS_BENCHDATA)"
)
# everything but HaluEval (its 47 MB summarization file is tested on a truncated copy below)
FAST_SOURCES = [s for s in realdata.SOURCES if s != "halueval"]


def _check_spans(claim: Claim) -> None:
    if claim.label == 0:
        assert claim.spans == (), claim.uid
        return
    assert claim.spans is None or claim.spans, claim.uid
    previous_end = -1
    for start, end in claim.spans or ():
        assert previous_end < start < end <= len(claim.answer), (claim.uid, claim.spans)
        text = claim.answer[start:end]
        assert text.strip() == text and text, (claim.uid, text)
        previous_end = end


@pytest.fixture(scope="module")
def parts() -> dict[str, list[Claim]]:
    if not BENCH.is_dir():
        pytest.skip(f"benchdata not found at {BENCH}")
    return {
        p: realdata.load_real(part=p, sources=FAST_SOURCES)  # type: ignore[arg-type]
        for p in ("train", "heldout")
    }


# ---------------------------------------------------------------- guards (no data needed)


@pytest.mark.parametrize(
    "parts_",
    [
        ("wice", "non_supported_tokens", "test.jsonl"),
        ("wice", "entailment_retrieval", "claim", "test.jsonl"),
        ("ragtruth_subsets", "ragtruth_test_subset_with_context.jsonl"),
        ("faithbench", "data.json"),
        ("esnli", "s1.test"),
    ],
)
def test_eval_only_paths_are_refused(parts_: tuple[str, ...], tmp_path: Path) -> None:
    with pytest.raises(PermissionError, match="eval-only"):
        realdata._path(*parts_, root=tmp_path)


def test_train_role_paths_are_allowed(tmp_path: Path) -> None:
    assert (
        realdata._path("wice", "non_supported_tokens", "train.jsonl", root=tmp_path).name
        == "train.jsonl"
    )
    assert realdata._path("begin", "wow", "begin_test_wow.tsv", root=tmp_path).parent.name == "wow"


@needs_bench
def test_loading_never_opens_an_eval_only_file(monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[str] = []
    real_open = Path.open

    def spy(self: Path, *args: Any, **kwargs: Any) -> Any:
        opened.append(str(self))
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", spy)
    realdata.load_real(sources=["wice", "summac", "xsumfaith"])
    assert any("non_supported_tokens/train.jsonl" in p for p in opened)
    assert not [
        p for p in opened if p.endswith("test.jsonl") or "ragtruth" in p or "faithbench" in p
    ]


def test_unknown_part_or_source_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="part"):
        realdata.load_real(tmp_path, part="test")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown sources"):
        realdata.load_real(tmp_path, sources=["nope"])
    with pytest.raises(FileNotFoundError, match="benchdata"):
        realdata.load_real(tmp_path / "missing")


# ---------------------------------------------------------------- pure converters


def test_wice_token_spans_mark_the_flagged_tokens() -> None:
    claim = "The audience consists of Australian ex-pats, mostly."
    tokens = [
        "The",
        "audience",
        "consists",
        "of",
        "Australian",
        "ex",
        "-",
        "pats",
        ",",
        "mostly",
        ".",
    ]
    flags = [False, False, False, False, True, True, True, True, False, True, False]
    spans = realdata.wice_token_spans(claim, tokens, flags)
    assert spans is not None
    assert [claim[s:e] for s, e in spans] == ["Australian ex-pats", "mostly"]
    # a token that is not in the text gives no spans rather than wrong ones
    assert realdata.wice_token_spans(claim, ["The", "crowd"], [False, True]) is None


def test_xsum_majority_is_per_character() -> None:
    summary = "a man was arrested in leeds on friday."
    leeds = (summary.index("leeds"), summary.index("leeds") + 5)
    friday = (summary.index("friday"), summary.index("friday") + 6)
    # two of three mark "leeds", one marks "friday": only "leeds" has a majority
    label, spans = realdata.xsum_majority(summary, [[leeds], [leeds, friday], []])
    assert label == 1 and spans == (leeds,)
    # one of three marks something: supported by majority
    assert realdata.xsum_majority(summary, [[leeds], [], []]) == (0, ())
    # two mark disjoint text: unsupported, but no character has a majority
    assert realdata.xsum_majority(summary, [[leeds], [friday], []]) == (1, None)


def test_xsum_span_uses_1_based_offsets_and_unescapes() -> None:
    summary = "the leader of bahrain's main opposition party has spoken about bahrain's king."
    row = {"hallucinated_span": "bahrain\\'s", "hallucinated_span_start": "15"}
    assert realdata.xsum_span(summary, row) == (14, 23)
    row = {"hallucinated_span": "bahrain\\'s", "hallucinated_span_start": "64"}
    start, end = realdata.xsum_span(summary, row)  # type: ignore[misc]
    assert summary[start:end] == "bahrain's" and start > 40


def test_summedits_spans_are_the_changed_words() -> None:
    original = "The company reported a fall in sales and guided for $5bn in 2023."
    edited = "The company reported a rise in sales and guided for $7bn in 2023."
    spans = realdata.summedits_spans(edited, original)
    assert spans is not None
    assert [edited[s:e] for s, e in spans] == ["rise", "$7bn"]
    # a pure deletion leaves nothing in the answer to mark
    assert (
        realdata.summedits_spans(
            "The company reported a fall.", "The company reported a sharp fall."
        )
        is None
    )


@pytest.mark.parametrize(
    ("raw", "label"),
    [
        ("hallucination", 1),
        ("partial hallucination", 1),
        ("entailment,hallucination", 1),
        ("Entailment", 0),
        ("entailment,uncooperative", 0),
        ("entailmentt,uncooperative", 0),
        ("generic", None),
        ("uncooperative", None),
        ("", None),
    ],
)
def test_faithdial_labels(raw: str, label: int | None) -> None:
    assert realdata.faithdial_label(raw) == label


def test_split_is_seeded_and_ignores_formatting() -> None:
    doc = "Paul Merson has restarted his row with Andros Townsend after the game on Sunday."
    assert realdata.split_of_context(doc) == realdata.split_of_context(
        doc.lower().replace(" ", "  ")
    )
    contexts = [f"Document number {i} about topic {i * 7}." for i in range(3000)]
    split = [realdata.split_of_context(c, seed=13) for c in contexts]
    other = [realdata.split_of_context(c, seed=14) for c in contexts]
    assert 0.07 < split.count("heldout") / len(split) < 0.13
    assert split != other


# ---------------------------------------------------------------- converters on the real files


@needs_bench
def test_every_claim_is_well_formed(parts: dict[str, list[Claim]]) -> None:
    for claims in parts.values():
        for claim in claims:
            assert claim.answer and claim.context and claim.label in (0, 1)
            _check_spans(claim)
    sources = {c.source.split("/")[0] for c in parts["train"]}
    assert sources == set(FAST_SOURCES)


@needs_bench
def test_split_is_disjoint_by_context_and_deduplicated(parts: dict[str, list[Claim]]) -> None:
    keys = {p: {realdata._context_key(c.context) for c in claims} for p, claims in parts.items()}
    assert not keys["train"] & keys["heldout"]
    total = len(parts["train"]) + len(parts["heldout"])
    assert 0.05 < len(parts["heldout"]) / total < 0.16
    seen = set()
    for claim in parts["train"] + parts["heldout"]:
        key = tuple(realdata._norm(x) for x in (claim.context, claim.question, claim.answer))
        assert key not in seen
        seen.add(key)
    uids = [c.uid for c in parts["train"] + parts["heldout"]]
    assert len(uids) == len(set(uids))


@needs_bench
def test_same_seed_same_split_and_sample() -> None:
    first = realdata.load_real(part="heldout", sources=["summac", "begin"], max_per_source=40)
    again = realdata.load_real(part="heldout", sources=["summac", "begin"], max_per_source=40)
    other = realdata.load_real(part="heldout", sources=["summac", "begin"], seed=99)
    assert [c.uid for c in first] == [c.uid for c in again]
    assert max(sum(c.source == s for c in first) for s in {c.source for c in first}) == 40
    assert {c.uid for c in other} != {
        c.uid for c in realdata.load_real(part="heldout", sources=["summac", "begin"])
    }


def _rows(*parts_: str) -> list[dict[str, Any]]:
    path = realdata._path(*parts_, root=BENCH)
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


@needs_bench
def test_wice_spans_are_the_non_supported_tokens(parts: dict[str, list[Claim]]) -> None:
    by_answer = defaultdict(list)
    for claim in parts["train"] + parts["heldout"]:
        if claim.source == "wice" and claim.spans:
            by_answer[claim.answer].append(claim)
    checked = 0
    for split in ("train", "dev"):
        for row in _rows("wice", "non_supported_tokens", f"{split}.jsonl"):
            runs, run = [], []  # maximal runs of flagged tokens
            for token, flag in zip(row["claim_tokens"], row["non_supported_spans"], strict=True):
                if flag:
                    run.append(token)
                elif run:
                    runs.append("".join(run))
                    run = []
            if run:
                runs.append("".join(run))
            for claim in by_answer.get(row["claim"].strip(), []):
                if claim.context != "\n".join(row["evidence"]).strip():
                    continue
                marked = [re.sub(r"\s+", "", claim.answer[s:e]) for s, e in claim.spans or ()]
                # adjacent runs separated only by spaces are merged into one span
                assert "".join(marked) == re.sub(r"\s+", "", "".join(runs))
                assert all(any(m.startswith(re.sub(r"\s+", "", r)) for r in runs) for m in marked)
                checked += 1
    assert checked >= 450  # 498 annotated sub-claims, a few deduplicated


@needs_bench
def test_xsumfaith_spans_lie_inside_annotated_spans(parts: dict[str, list[Claim]]) -> None:
    path = realdata._path("xsumfaith", "hallucination_annotations_xsum_summaries.csv", root=BENCH)
    with path.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    docs = json.loads(realdata._path("summac", "xsumfaith.json", root=BENCH).read_text("utf-8"))
    document = {r["bbcid"]: r["document"].strip() for r in docs.values()}
    marked: dict[tuple[str, str], list[str]] = defaultdict(list)
    workers: dict[tuple[str, str], dict[str, bool]] = defaultdict(dict)
    for row in rows:
        if row["bbcid"] not in document:
            continue
        key = (document[row["bbcid"]], realdata._unescape(row["summary"]).strip())
        hit = row["hallucination_type"] != "NULL"
        workers[key][row["worker_id"]] = workers[key].get(row["worker_id"], False) or hit
        if hit:
            marked[key].append(realdata._unescape(row["hallucinated_span"]))
    claims = [c for c in parts["train"] + parts["heldout"] if c.source == "xsumfaith"]
    assert len(claims) > 1500
    with_spans = 0
    for claim in claims:
        key = (claim.context, claim.answer)
        votes = sum(workers[key].values())
        assert claim.label == (1 if votes * 2 > len(workers[key]) else 0), claim.answer
        for start, end in claim.spans or ():
            # majority spans only one space apart are merged, so check word by word
            for word in claim.answer[start:end].split():
                assert any(word in span for span in marked[key]), (word, marked[key])
            with_spans += 1
    assert with_spans > 1000


@needs_bench
def test_summedits_spans_are_edits_of_the_seed_summary(parts: dict[str, list[Claim]]) -> None:
    rows = json.loads(
        realdata._path("summedits", "summedits_news.json", root=BENCH).read_text("utf-8")
    )
    original = {r["summary"].strip(): r["original_summary"] for r in rows}
    checked = 0
    for claim in parts["train"] + parts["heldout"]:
        if claim.source != "summedits/news" or not claim.spans:
            continue
        outside = re.sub(r"\s+", " ", "".join(_outside(claim.answer, claim.spans))).split()
        words = original[claim.answer].split()
        strip = "\"'()[],.;:!?"
        assert _is_subsequence([w.strip(strip) for w in outside], [w.strip(strip) for w in words])
        checked += 1
    assert checked > 300


def _outside(text: str, spans: tuple[tuple[int, int], ...]) -> Iterator[str]:
    pos = 0
    for start, end in spans:
        yield text[pos:start] + " "
        pos = end
    yield text[pos:]


def _is_subsequence(needle: list[str], hay: list[str]) -> bool:
    it = iter(hay)
    return all(any(w == h for h in it) for w in needle if w)


@needs_bench
def test_labels_follow_each_source(parts: dict[str, list[Claim]]) -> None:
    claims = parts["train"] + parts["heldout"]
    rate = {
        s: sum(c.label for c in claims if c.source == s)
        / max(1, sum(c.source == s for c in claims))
        for s in ("summac/factcc", "true/summeval", "wice", "xsumfaith", "begin")
    }
    # FactCC and SummEval summaries are mostly consistent, WiCE token rows and XSum mostly not
    assert rate["summac/factcc"] < 0.1 and rate["true/summeval"] < 0.3
    assert rate["wice"] > 0.7 and rate["xsumfaith"] > 0.7
    assert 0.4 < rate["begin"] < 0.8


def test_halueval_on_a_truncated_copy(tmp_path: Path) -> None:
    if not BENCH.is_dir():
        pytest.skip(f"benchdata not found at {BENCH}")
    (tmp_path / "halueval").mkdir()
    for task in ("qa", "dialogue", "summarization"):
        name = f"dataset_halueval_{task}.jsonl"
        with (BENCH / "halueval" / name).open(encoding="utf-8") as fh:
            head = [next(fh) for _ in range(60)]
        (tmp_path / "halueval" / name).write_text("".join(head), encoding="utf-8")
    claims = [
        c
        for p in ("train", "heldout")
        for c in realdata.load_real(tmp_path, part=p, sources=["halueval"])  # type: ignore[arg-type]
    ]
    for claim in claims:
        _check_spans(claim)
        assert claim.spans == (() if claim.label == 0 else None)
    qa = [json.loads(line) for line in (tmp_path / "halueval" / "dataset_halueval_qa.jsonl").open()]
    right = {c.answer for c in claims if c.source == "halueval/qa" and c.label == 0}
    wrong = {c.answer for c in claims if c.source == "halueval/qa" and c.label == 1}
    assert {r["right_answer"].strip() for r in qa} == right
    assert {r["hallucinated_answer"].strip() for r in qa} == wrong
    assert any(c.question for c in claims if c.source == "halueval/dialogue")


# ---------------------------------------------------------------- hard cases (committed files)


def _hard(part: str) -> list[dict[str, Any]]:
    path = hardcases.DATA_DIR / f"hardcases_{part}.jsonl"
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


@pytest.mark.parametrize("part", ["train", "test"])
def test_hardcase_spans_mark_exactly_the_changed_text(part: str) -> None:
    records = _hard(part)
    assert 300 <= len(records) <= 2000
    for r in records:
        claim = hardcases._to_claim(r)
        _check_spans(claim)
        edits = r["meta"]["edits"]
        assert (claim.label == 1) == bool(edits) == bool(claim.spans)
        assert [tuple(e["span"]) for e in edits] == list(claim.spans or ())
        faithful = claim.answer
        for e in reversed(edits):
            start, end = e["span"]
            assert claim.answer[start:end] == e["text"] != e["original"]
            faithful = faithful[:start] + e["original"] + faithful[end:]
        if not edits:
            continue
        kind = r["meta"]["kind"]
        assert kind in hardcases.ERROR_KINDS
        if r["meta"]["origin"] == "template":  # no other sentence restates the true fact
            for e in edits:
                start, end = e["span"]
                rest = claim.answer[:start] + " " + claim.answer[end:]
                assert not re.search(rf"(?<!\w){re.escape(e['original'])}(?!\w)", rest), r["answer"]
        if kind != "wrong_comparison":  # the faithful comparative is inferred, not quoted
            for e in edits:
                assert e["original"] in claim.context, (kind, e)
        if kind == "date_shift":
            assert (
                re.fullmatch(r"\d{1,2}", e["text"])
                and abs(int(e["text"]) - int(e["original"])) <= 6
            )
        if kind == "unit_swap":
            assert e["text"] in {
                "lb",
                "ft",
                "m",
                "mile",
                "miles",
                "km",
                "pounds",
                "kg",
                "feet",
                "metres",
            }
        if kind == "negation_flip":
            assert e["text"].removeprefix("not ") == e["original"].removeprefix("not ")
            assert e["text"].startswith("not ") != e["original"].startswith("not ")


@pytest.mark.parametrize("part", ["train", "test"])
def test_hardcases_cover_every_kind_with_both_labels(part: str) -> None:
    records = _hard(part)
    kinds = {r["meta"]["kind"] for r in records}
    assert set(hardcases.ERROR_KINDS) | set(hardcases.SUPPORTED_KINDS) <= kinds
    assert 0.35 < sum(r["label"] for r in records) / len(records) < 0.65
    for r in records:
        if r["meta"]["kind"] in hardcases.SUPPORTED_KINDS:
            assert r["label"] == 0 and r["spans"] == []
    template = [r for r in records if r["meta"]["origin"] == "template"]
    words = [len(r["context"].split()) for r in template]
    assert min(words) >= 60 and max(words) <= 350 and sum(words) / len(words) > 150
    assert any(r["meta"]["origin"] != "template" for r in records)


def test_hardcase_refusals_are_about_absent_facts() -> None:
    for r in _hard("train") + _hard("test"):
        if r["meta"]["kind"] != "refusal":
            continue
        if r["meta"]["origin"] != "template":
            keys = next(k for q, k, _ in hardcases._REFUSAL_QUESTIONS if q == r["question"])
            assert not any(k in r["context"].lower() for k in keys)
            continue
        match = re.search(r"who the CEO of (.+?) is", r["answer"])
        if match:
            passage = next(
                p for p in r["context"].split("\n\n") if p.startswith(f"{match.group(1)} is a")
            )
            assert "chief executive" not in passage
        match = re.search(r"fee to park at the (.+?) Trail", r["answer"])
        if match:
            assert "park" not in r["context"]


def test_hardcase_parts_are_disjoint_and_reproducible() -> None:
    train, test = _hard("train"), _hard("test")
    assert not {r["context"] for r in train} & {r["context"] for r in test}
    assert not {r["uid"] for r in train} & {r["uid"] for r in test}
    # the template records regenerate byte for byte (the real-context ones need benchdata)
    committed = [r for r in test if r["meta"]["origin"] == "template"]
    again = hardcases.generate("test", n_template=300, n_real=0)
    assert again == committed
    claims = hardcases.load_hardcases("test")
    assert [c.uid for c in claims] == [r["uid"] for r in test]
    assert all(isinstance(c.spans, tuple) for c in claims)
