"""Map the repository's top-level folders into the single installed namespace.

Metadata lives in pyproject.toml. Only the package layout is computed here, so a new
subpackage under core/ or an adapter folder is installed without editing a list.
"""

from pathlib import Path

from setuptools import setup

ROOTS = {
    "truthlens_integrations": "truthlens_integrations",
    "truthlens_integrations.core": "core",
    "truthlens_integrations.langchain_adapter": "langchain_adapter",
    "truthlens_integrations.llamaindex_adapter": "llamaindex_adapter",
}


def _packages() -> list[str]:
    here = Path(__file__).parent
    return [
        ".".join((name, *init.parent.relative_to(here / folder).parts))
        for name, folder in ROOTS.items()
        for init in sorted((here / folder).rglob("__init__.py"))
    ]


setup(package_dir=ROOTS, packages=_packages())
