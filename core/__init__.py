"""Framework-free engine: detection, scoring, policy and mitigation.

Its public names are those of its shared modules: every error (``_errors``), the
detection types (``_types``), the scoring functions (``_scoring``), the device choice
(``_device``), the optional-dependency helpers (``_optional``), strict JSON reading
(``_json``) and the input size limits the service and the command line share
(``_limits``).
"""

from __future__ import annotations

from . import _device, _errors, _json, _limits, _optional, _scoring, _types
from ._device import *  # noqa: F403 - each shared module's __all__ is public here
from ._errors import *  # noqa: F403
from ._json import *  # noqa: F403
from ._limits import *  # noqa: F403
from ._optional import *  # noqa: F403
from ._scoring import *  # noqa: F403
from ._types import *  # noqa: F403

__all__: list[str] = []
__all__ += _device.__all__
__all__ += _errors.__all__
__all__ += _json.__all__
__all__ += _limits.__all__
__all__ += _optional.__all__
__all__ += _scoring.__all__
__all__ += _types.__all__
