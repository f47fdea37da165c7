"""Writing result files so that a reader never sees half of one."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path


def write_atomically(path: str | os.PathLike[str], write: Callable[[Path], object]) -> Path:
    """Calls ``write`` on a temporary name beside ``path``, then renames it into place.

    Whatever ``write`` returns (a byte count, say) is ignored.

    A crash leaves either the old file or the new one, never a torn one; the
    temporary file is removed if ``write`` fails.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    # mkstemp makes the file private; a result file gets the usual permissions.
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp_path, 0o666 & ~umask)
    try:
        write(tmp_path)
        with open(tmp_path, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp_path, path)
    except BaseException:
        tmp_path.unlink(missing_ok=True)
        raise
    return path


def write_text_atomically(path: str | os.PathLike[str], text: str) -> Path:
    return write_atomically(path, lambda p: p.write_text(text))
