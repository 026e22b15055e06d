"""The lab's tests share the product tests' fixtures (tiny models, the ONNX cache)."""

from tests.conftest import _onnx_cache, tiny_bert_dir  # noqa: F401  (fixtures, found by name)
