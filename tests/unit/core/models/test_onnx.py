"""Tests of ``core/models/_onnx.py``: the ONNX Runtime backend: which backend runs, graphs tied
to their weights, same verdicts.
"""

from __future__ import annotations

import importlib.util
import logging
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.conftest import BUNDLED, needs_weights
from truthlens_integrations._cli import main
from truthlens_integrations.core._errors import ConfigError, MissingDependencyError, ModelLoadError
from truthlens_integrations.core.models import _onnx
from truthlens_integrations.core.models._loading import (
    clear_model_cache,
    export_onnx,
    load_token_classifier,
)
from truthlens_integrations.core.models.detection import load_detector

# -- The ONNX Runtime backend: which backend runs, graphs tied to their weights, same verdicts.


pytestmark = pytest.mark.skipif(not _onnx.onnx_available(), reason="the fast extra is missing")

CPU = torch.device("cpu")


@pytest.fixture(autouse=True)
def _fp32_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    # The graph a plain load runs depends on the CPU (int8 where it has VNNI); these tests
    # check the graphs' mechanics on the fp32 graph wherever they run, and say int8 when
    # they mean it. Which graph is the default is tested on its own below.
    monkeypatch.setattr(_onnx, "cpu_has_int8_dot_product", lambda: False)


def _no_onnxruntime(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, *args: object) -> object:
        return None if name in {"onnxruntime", "onnx"} else real(name, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(_onnx.importlib.util, "find_spec", find_spec)


# -- which backend runs ----------------------------------------------------------------------


@pytest.mark.parametrize(("vnni", "graph"), [(True, "int8"), (False, "fp32")])
def test_auto_runs_int8_where_it_was_measured_and_fp32_elsewhere(
    vnni: bool, graph: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # int8 keeps the figures users see on CPUs with VNNI (lab/records/int8/); elsewhere its
    # kernels may saturate, so fp32 runs. An asked-for precision is always the one run.
    monkeypatch.setattr(_onnx, "cpu_has_int8_dot_product", lambda: vnni)
    for backend in ("auto", "onnx"):
        assert _onnx.resolve_backend(backend, CPU, None, model_type="bert", local=True) == (
            "onnx",
            graph,
        )
        for asked, ran in (("float32", "fp32"), ("int8", "int8")):
            got = _onnx.resolve_backend(backend, CPU, asked, model_type="bert", local=True)
            assert got == ("onnx", ran)


@pytest.mark.parametrize(
    ("device", "dtype", "model_type", "local"),
    [
        (torch.device("cuda"), None, "bert", True),  # GPUs stay on torch
        (CPU, "bfloat16", "bert", True),  # half precision is torch's
        (CPU, None, "modernbert", True),  # export not verified for this family
        (CPU, None, "bert", False),  # hub id: no folder to build from
    ],
)
def test_auto_stays_on_torch(
    device: torch.device, dtype: str | None, model_type: str, local: bool
) -> None:
    assert _onnx.resolve_backend("auto", device, dtype, model_type=model_type, local=local)[0] == (
        "torch"
    )


def test_auto_runs_the_chosen_graph_on_a_cpu_where_it_can(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Where auto runs an ONNX graph, and where it keeps torch.
    monkeypatch.setattr(_onnx, "cpu_has_int8_dot_product", lambda: False)
    cases = {
        # (backend, device, dtype, model family, local folder): what runs
        ("auto", CPU, None, "bert", True): ("onnx", "fp32"),
        ("auto", CPU, "float32", "bert", True): ("onnx", "fp32"),
        ("auto", torch.device("cuda"), None, "bert", True): ("torch", "fp32"),
        ("auto", CPU, "bfloat16", "bert", True): ("torch", "fp32"),
        ("auto", CPU, None, "modernbert", True): ("torch", "fp32"),
        ("auto", CPU, None, "bert", False): ("torch", "fp32"),
        ("torch", CPU, None, "bert", True): ("torch", "fp32"),
    }
    for (backend, device, dtype, family, local), expected in cases.items():
        got = _onnx.resolve_backend(backend, device, dtype, model_type=family, local=local)
        assert got == expected, (backend, device, dtype, family, local)
    # without onnxruntime auto quietly keeps torch
    _no_onnxruntime(monkeypatch)
    assert _onnx.resolve_backend("auto", CPU, None, model_type="bert", local=True)[0] == "torch"


def test_sessions_do_not_spin(tiny_bert_dir: Path) -> None:
    clear_model_cache()
    graph = load_token_classifier(tiny_bert_dir, backend="onnx").graph
    assert graph is not None
    options = graph.session.get_session_options()
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    assert options.intra_op_num_threads == _onnx._threads()


def test_forced_torch_and_bad_values_are_typed_errors(tiny_bert_dir: Path) -> None:
    assert _onnx.resolve_backend("torch", CPU, None, model_type="bert", local=True)[0] == "torch"
    with pytest.raises(ConfigError, match="unknown backend 'fast'"):
        load_detector(tiny_bert_dir, backend="fast")
    with pytest.raises(ConfigError, match="int8"):
        load_detector(tiny_bert_dir, backend="torch", dtype="int8")
    with pytest.raises(ConfigError, match="runs on the CPU"):
        _onnx.resolve_backend("onnx", torch.device("cuda"), None, model_type="bert", local=True)
    with pytest.raises(ConfigError, match="fp32 or int8"):
        _onnx.resolve_backend("onnx", CPU, "float16", model_type="bert", local=True)
    assert load_detector(tiny_bert_dir, backend="torch").backend == "torch"  # type: ignore[attr-defined]
    assert load_detector(tiny_bert_dir).backend == "onnx-fp32"  # type: ignore[attr-defined]
    assert load_detector(tiny_bert_dir, backend="onnx").backend == "onnx-fp32"  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match="verified for bert"):
        _onnx.resolve_backend("onnx", CPU, None, model_type="modernbert", local=True)


def test_a_missing_extra_names_the_install_when_onnx_is_forced(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _no_onnxruntime(monkeypatch)
    # auto quietly keeps torch ...
    assert _onnx.resolve_backend("auto", CPU, None, model_type="bert", local=True)[0] == "torch"
    # ... a forced onnx says what to install
    with pytest.raises(
        MissingDependencyError, match=r"pip install 'truthlens-integrations\[fast\]'"
    ):
        _onnx.resolve_backend("onnx", CPU, None, model_type="bert", local=True)


def test_importing_the_package_does_not_import_onnxruntime() -> None:
    code = (
        "import sys, truthlens_integrations, truthlens_integrations.core;"
        "print(any(m.startswith(('onnxruntime', 'onnx')) for m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_threads_follow_the_cpu_set_or_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    monkeypatch.delenv("TRUTHLENS_ONNX_THREADS", raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    cores = len(os.sched_getaffinity(0))
    assert _onnx._threads() == cores
    # a launcher's reservation (Ray sets OMP_NUM_THREADS to a replica's num_cpus) caps it
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert _onnx._threads() == 1
    monkeypatch.setenv("OMP_NUM_THREADS", str(cores + 4))
    assert _onnx._threads() == cores
    monkeypatch.setenv("OMP_NUM_THREADS", "lots")  # other libraries' value to judge
    assert _onnx._threads() == cores
    monkeypatch.setenv("TRUTHLENS_ONNX_THREADS", str(cores))
    assert _onnx._threads() == cores  # the package's own variable wins over the reservation
    monkeypatch.setenv("TRUTHLENS_ONNX_THREADS", "zero")
    with pytest.raises(ConfigError, match="TRUTHLENS_ONNX_THREADS"):
        _onnx._threads()


def test_more_threads_than_cores_are_cut_to_the_cores_with_a_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import os

    cores = len(os.sched_getaffinity(0))
    monkeypatch.setenv("TRUTHLENS_ONNX_THREADS", "512")
    monkeypatch.setattr(_onnx, "_warned_threads", set())
    with caplog.at_level(logging.WARNING, logger=_onnx.__name__):
        assert _onnx._threads() == cores
        assert _onnx._threads() == cores
    warnings = [r for r in caplog.records if "TRUTHLENS_ONNX_THREADS=512" in r.getMessage()]
    assert len(warnings) == 1  # once per process, not once per session
    assert f"{cores} cores" in warnings[0].getMessage()


# -- graphs belong to their weights ----------------------------------------------------------


def _retrain(folder: Path) -> None:
    """Change the weights in place, as a retrained detector saved over the old one would."""
    from safetensors.torch import load_file, save_file

    file = folder / "model.safetensors"
    tensors = load_file(file)
    name = next(k for k in tensors if k.startswith("classifier.weight"))
    tensors[name] = tensors[name] + 0.5
    save_file(tensors, file, metadata={"format": "pt"})


def test_cached_graph_is_rebuilt_when_the_weights_change(
    tiny_bert_dir: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "model"
    shutil.copytree(tiny_bert_dir, folder)
    clear_model_cache()
    first = load_token_classifier(folder, backend="onnx")
    assert first.graph is not None
    assert first.model is None  # the torch weights are not kept
    assert first.graph.path.is_relative_to(_onnx.cache_dir())
    _retrain(folder)
    clear_model_cache()
    second = load_token_classifier(folder, backend="onnx")
    assert second.graph is not None
    assert second.graph.path != first.graph.path
    # the new graph computes with the new weights: torch on the same folder agrees with it
    detector = load_detector(folder, backend="onnx")
    reference = load_detector(folder, backend="torch")
    item = {"context": ["alice visited the tower in paris"], "answer": "bob built the bridge"}
    a = detector.detect(**item, question=None)
    b = reference.detect(**item, question=None)
    assert [t.probability for t in a.tokens] == pytest.approx(
        [t.probability for t in b.tokens], abs=1e-5
    )


def test_a_foreign_graph_in_the_cache_is_rebuilt(tiny_bert_dir: Path, tmp_path: Path) -> None:
    folder = tmp_path / "model"
    shutil.copytree(tiny_bert_dir, folder)
    clear_model_cache()
    graph = load_token_classifier(folder, backend="onnx").graph
    assert graph is not None
    path = graph.path
    # another model's graph lands at this key (a copied cache, a collision)
    other = tmp_path / "other"
    shutil.copytree(tiny_bert_dir, other)
    _retrain(other)
    foreign = export_onnx(other, ["fp32"])[0]
    shutil.copyfile(foreign, path)
    clear_model_cache()
    rebuilt = load_token_classifier(folder, backend="onnx").graph
    assert rebuilt is not None
    assert rebuilt.path == path
    assert _onnx._stamp(rebuilt.session)[0] == _onnx.weights_fingerprint(
        *sorted(folder.glob("model*.safetensors")), folder / "config.json"
    )


def test_a_stale_graph_beside_the_weights_is_refused(
    tiny_bert_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = tmp_path / "model"
    shutil.copytree(tiny_bert_dir, folder)
    assert main(["export-onnx", str(folder)]) == 0
    assert {p.name for p in (folder / "onnx").iterdir()} == {
        "model.fp32.onnx",
        "model.fp32.onnx.sha256",
        "model.int8.onnx",
        "model.int8.onnx.sha256",
    }
    clear_model_cache()
    loaded = load_token_classifier(folder, backend="onnx")
    assert loaded.graph is not None
    assert loaded.graph.path == folder / "onnx" / "model.fp32.onnx"
    _retrain(folder)
    clear_model_cache()
    with pytest.raises(ModelLoadError, match="export-onnx"):
        load_token_classifier(folder, backend="onnx")
    # auto chose the graph only for speed: it runs torch instead and says why
    with caplog.at_level(logging.WARNING, logger="truthlens_integrations.core.models._loading"):
        fallback = load_token_classifier(folder)
    assert fallback.backend == "torch"
    assert fallback.model is not None
    assert "export-onnx" in caplog.text
    # rebuilding fixes it
    assert main(["export-onnx", str(folder), "--precision", "fp32"]) == 0
    clear_model_cache()
    assert load_token_classifier(folder, backend="onnx").graph is not None


def _flip_the_classifier(graph: Path) -> None:
    """Edit a graph's classifier bias in place, keeping its metadata (the fingerprint)."""
    import numpy as np
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(graph))
    bias = next(t for t in model.graph.initializer if t.name.endswith("classifier.bias"))
    values = np.array([50.0, -50.0], dtype=np.float32)  # every token "supported"
    bias.CopyFrom(numpy_helper.from_array(values, bias.name))
    onnx.save(model, str(graph))


def test_an_edited_graph_beside_the_weights_is_refused(
    tiny_bert_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = tmp_path / "model"
    shutil.copytree(tiny_bert_dir, folder)
    assert main(["export-onnx", str(folder), "--precision", "fp32"]) == 0
    graph = folder / "onnx" / "model.fp32.onnx"
    item = {"context": ["alice visited the tower in paris"], "answer": "bob built the bridge"}
    clear_model_cache()
    honest = load_detector(folder, backend="onnx").detect(**item, question=None)
    _flip_the_classifier(graph)
    clear_model_cache()
    with pytest.raises(ModelLoadError, match=r"checksum.*export-onnx"):
        load_detector(folder, backend="onnx")
    # auto runs torch instead, which agrees with the graph as exported
    with caplog.at_level(logging.WARNING, logger="truthlens_integrations.core.models._loading"):
        fallback = load_detector(folder)
    assert fallback.backend == "torch"  # type: ignore[attr-defined]
    assert "checksum" in caplog.text
    again = fallback.detect(**item, question=None)
    assert [t.probability for t in again.tokens] == pytest.approx(
        [t.probability for t in honest.tokens], abs=1e-5
    )


def test_a_truncated_cached_graph_is_rebuilt(
    tiny_bert_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = tmp_path / "model"
    shutil.copytree(tiny_bert_dir, folder)
    clear_model_cache()
    graph = load_token_classifier(folder, backend="onnx").graph
    assert graph is not None
    path, size = graph.path, graph.path.stat().st_size
    with path.open("r+b") as fh:  # a disk that filled up, a copy cut short
        fh.truncate(size // 2)
    clear_model_cache()
    with caplog.at_level(logging.WARNING):
        rebuilt = load_token_classifier(folder)  # auto: must not quietly stay on torch
    assert rebuilt.backend == "onnx"
    assert rebuilt.graph is not None
    assert rebuilt.graph.path == path
    assert path.stat().st_size > size // 2
    assert [r.getMessage() for r in caplog.records if "rebuilding" in r.getMessage()] == [
        f"ONNX graph {path} does not match its checksum (changed or cut short after export); "
        "rebuilding it"
    ]
    assert _onnx._integrity_problem(path) is None
    # no graph and no checksum are left half-written beside it (an int8 graph another test
    # built for the same weights may share the cache folder)
    names = {p.name for p in path.parent.iterdir()}
    assert {"model.fp32.onnx", "model.fp32.onnx.sha256"} <= names
    assert names <= {f"model.{q}.onnx{end}" for q in ("fp32", "int8") for end in ("", ".sha256")}


def test_int8_rows_do_not_depend_on_their_batch(tiny_bert_dir: Path) -> None:
    detector = load_detector(tiny_bert_dir, backend="onnx", dtype="int8", batch_size=8)
    items = [
        {"context": ["alice visited the tower in paris"], "answer": "bob built the bridge"},
        {
            "context": ["the old castle in rome was painted red by carol in 1920"] * 3,
            "answer": "carol painted the castle blue in 1950 and sold the garden",
        },
    ]
    from truthlens_integrations.core import DetectionInput

    inputs = [DetectionInput.create(question=None, **i) for i in items]
    together = detector.detect_batch(inputs)
    alone = [detector.detect_batch([x])[0] for x in inputs]
    for a, b in zip(together, alone, strict=True):
        assert [t.probability for t in a.tokens] == [t.probability for t in b.tokens]


# -- the bundled models: same verdicts -------------------------------------------------------

# Fixed answers with known character: a changed year, a changed height, a supported
# restatement, an unsupported addition, a summary of a longer context.
_CASES = [
    (
        ["The Eiffel Tower was built from 1887 to 1889 in Paris. It is 330 metres tall."],
        "When was the Eiffel Tower built?",
        "It was built in 1950 and is 330 metres tall.",
    ),
    (
        ["The Eiffel Tower was built from 1887 to 1889 in Paris. It is 330 metres tall."],
        "How tall is the Eiffel Tower?",
        "The tower is 500 metres tall.",
    ),
    (
        ["Marie Curie won the Nobel Prize in Physics in 1903 and in Chemistry in 1911."],
        "Which prizes did Marie Curie win?",
        "She won the Nobel Prize in Physics in 1903 and the Nobel Prize in Chemistry in 1911.",
    ),
    (
        ["The river Thames flows through London and reaches the North Sea."],
        "Where does the Thames flow?",
        "The Thames flows through London, past Oxford's famous copper mines, to the North Sea.",
    ),
    (
        [
            "The company reported revenue of 4.2 billion dollars for 2023, up 8 percent. "
            "Its chief executive, Ana Silva, said growth came from cloud services. "
            "The firm employs 12,000 people in 30 countries.",
            "Analysts had expected revenue of 4.0 billion dollars.",
        ],
        "Summarize the report.",
        "Revenue rose 8 percent to 4.2 billion dollars, beating the 4.0 billion analysts "
        "expected. CEO Ana Silva credited cloud services; the firm has 15,000 staff in "
        "30 countries.",
    ),
]


@pytest.fixture(scope="module")
def bundled_results() -> dict[str, list[object]]:
    out: dict[str, list[object]] = {}
    for name, options in {
        "torch": {"backend": "torch"},
        "fp32": {"backend": "onnx", "dtype": "float32"},
        "int8": {"backend": "onnx", "dtype": "int8"},
    }.items():
        detector = load_detector(**options)  # type: ignore[arg-type]
        out[name] = [detector.detect(context=c, question=q, answer=a) for c, q, a in _CASES]
    return out


@needs_weights
def test_onnx_fp32_gives_the_torch_verdicts(bundled_results: dict[str, list[object]]) -> None:
    for ref, got in zip(bundled_results["torch"], bundled_results["fp32"], strict=True):
        assert [(s.start, s.end) for s in got.spans] == [(s.start, s.end) for s in ref.spans]  # type: ignore[attr-defined]
        assert got.score == pytest.approx(ref.score, abs=1e-4)  # type: ignore[attr-defined]
        assert [t.probability for t in got.tokens] == pytest.approx(  # type: ignore[attr-defined]
            [t.probability for t in ref.tokens],
            abs=1e-4,  # type: ignore[attr-defined]
        )
    # the set is not trivial: torch flags some answers and passes others
    assert {r.detected for r in bundled_results["torch"]} == {True, False}  # type: ignore[attr-defined]


@needs_weights
def test_the_bundled_graphs_are_fused() -> None:
    # Recipe 2: one fused attention, two skip layer norms and one GELU per layer; the
    # unfused trace ran at 0.65-0.88x torch's speed (benchmarks/results/onnx_backend.md).
    import onnx

    detector = load_detector(backend="onnx", dtype="float32")
    graph = detector._loaded.graph  # type: ignore[attr-defined]
    ops = [n.op_type for n in onnx.load(str(graph.path)).graph.node]
    layers = detector._loaded.config.num_hidden_layers  # type: ignore[attr-defined]
    assert ops.count("Attention") == layers
    assert ops.count("SkipLayerNormalization") == 2 * layers
    assert "Softmax" not in ops
    int8 = load_detector(backend="onnx", dtype="int8")._loaded.graph  # type: ignore[attr-defined]
    assert "QAttention" in {n.op_type for n in onnx.load(str(int8.path)).graph.node}
    # the NLI branch's upper layers are copies with configs of their own: fused too
    from truthlens_integrations.core.models.nli import BundledNLI

    branch = BundledNLI(backend="onnx")._branch
    assert branch is not None
    nli_ops = [n.op_type for n in onnx.load(str(branch.model.path)).graph.node]
    assert nli_ops.count("Attention") == layers


@needs_weights
def test_onnx_int8_stays_close(bundled_results: dict[str, list[object]]) -> None:
    # int8 moves token probabilities (why fp32 is the default) but not far: a broken
    # graph (wrong inputs, wrong head, wrong quantization) lands far outside this.
    for ref, got in zip(bundled_results["torch"], bundled_results["int8"], strict=True):
        assert got.score == pytest.approx(ref.score, abs=0.15)  # type: ignore[attr-defined]
        assert got.detected == ref.detected  # type: ignore[attr-defined]


@needs_weights
def test_bundled_nli_and_prompt_head_agree_on_onnx() -> None:
    from truthlens_integrations.core.models.classifier import BundledPromptClassifier
    from truthlens_integrations.core.models.nli import BundledNLI

    pairs = [(c[0], a) for c, _, a in _CASES]
    prompts = [q for _, q, _ in _CASES] + ["Write a poem about the sea.", "Fix this SQL query."]
    torch_nli = BundledNLI(backend="torch").predict(pairs)
    onnx_nli = BundledNLI(backend="onnx").predict(pairs)
    assert BundledNLI(backend="onnx").uses_branch
    for ref, got in zip(torch_nli, onnx_nli, strict=True):
        assert got.label == ref.label
        assert got.confidence == pytest.approx(ref.confidence, abs=1e-4)
    torch_heads = BundledPromptClassifier(backend="torch").predict(prompts)
    onnx_heads = BundledPromptClassifier(backend="onnx").predict(prompts)
    for ref, got in zip(torch_heads, onnx_heads, strict=True):
        assert got.probability == pytest.approx(ref.probability, abs=1e-4)


@needs_weights
def test_the_policy_backend_reaches_every_model() -> None:
    from truthlens_integrations.core.engine._models import (
        load_classifier,
        load_nli,
        load_policy_detector,
    )
    from truthlens_integrations.core.policy import load_policy

    assert BUNDLED is not None
    policy = load_policy("hallucination:\n  backend: torch\n")
    assert load_policy_detector(policy).backend == "torch"  # type: ignore[attr-defined]
    assert load_nli(policy)._shared.loaded.backend == "torch"  # type: ignore[union-attr]
    assert load_classifier(policy)._shared.loaded.backend == "torch"  # type: ignore[attr-defined]
    # the default on this CPU, with the fast extra installed: the fp32 graph
    default = load_policy(None)
    assert load_policy_detector(default).backend == "onnx-fp32"  # type: ignore[attr-defined]
    assert load_nli(default)._shared.loaded.backend == "onnx"  # type: ignore[union-attr]
    forced = load_policy("hallucination:\n  backend: onnx\n")
    assert load_policy_detector(forced).backend == "onnx-fp32"  # type: ignore[attr-defined]
    assert load_nli(forced)._shared.loaded.backend != "torch"  # type: ignore[union-attr]
    assert load_classifier(forced)._shared.loaded.backend != "torch"  # type: ignore[attr-defined]
    with pytest.raises(ConfigError):
        load_policy("hallucination:\n  backend: fast\n")
