"""Shared file handling of the exporters: flush to disk without ever raising."""

from __future__ import annotations

import logging
import os
from typing import IO, Any

_logger = logging.getLogger(__name__)


def flush_to_disk(file: IO[Any] | None, path: object) -> bool:
    """Flush ``file`` and fsync it: ``True`` when done or no file is open; a failure is logged: ``False``."""
    if file is None:
        return True
    try:
        file.flush()
        os.fsync(file.fileno())
    except (OSError, ValueError) as exc:
        _logger.warning("toolspan: cannot flush %s: %s", path, exc)
        return False
    return True
