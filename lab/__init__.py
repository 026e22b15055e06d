"""The model lab: training code, selection records and the journal.

Nothing here is installed with the package, and the product (``core/``, the adapters,
``truthlens_integrations/``) never imports it (``tests/project/test_layout.py``).
"""
