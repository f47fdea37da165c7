"""Reading input files and writing result files, for every command alike.

Input files (scenarios, sweep files) are read by :func:`read_text`, which
says what is wrong with a file that is not text in terms a user can act on.
Result files are written by :func:`write_atomically`, so that a reader never
sees half of one.
"""

from __future__ import annotations

import errno
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

MAX_INPUT_BYTES = 16 * 2**20
"""The largest input file read: scenarios and sweep files are a few kilobytes,
and a bound keeps ``/dev/zero`` or a disk image given by mistake from filling memory."""


class InputFileError(ValueError):
    """An input file that cannot be read as text.

    ``reason`` says why; ``line`` is the line at fault, when there is one.
    Callers put them into their own error, which names what the file is for.
    """

    def __init__(self, path: str, reason: str, line: int | None = None):
        super().__init__(f"{path}{f':{line}' if line else ''}: {reason}")
        self.path, self.reason, self.line = path, reason, line


def read_text(path: str | os.PathLike[str], limit: int = MAX_INPUT_BYTES) -> str:
    """The UTF-8 text of an input file, or :class:`InputFileError` saying why not."""
    name = os.fspath(path)
    if not name:
        raise InputFileError("''", "an empty path names no file")
    if os.path.isdir(name):
        raise InputFileError(name, "is a directory; expected a file")
    try:
        with open(name, "rb") as f:
            data = f.read(limit + 1)
    except OSError as e:
        raise InputFileError(name, e.strerror or str(e)) from None
    if len(data) > limit:
        raise InputFileError(name, f"larger than {limit // 2**20} MiB; expected a text file of a few kilobytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        if data.startswith((b"\xff\xfe", b"\xfe\xff")):
            raise InputFileError(name, "is UTF-16 text; expected UTF-8", 1) from None
        line = data.count(b"\n", 0, e.start) + 1
        column = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise InputFileError(
            name, f"byte 0x{data[e.start]:02x} at column {column} is not UTF-8; expected UTF-8 text", line
        ) from None


def make_directory(path: str | os.PathLike[str]) -> Path:
    """Creates a directory for results (and its parents), refusing a file in the way by its name."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, "exists and is not a directory", os.fspath(path))
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise _named(e, path) from None
    return path


def write_atomically(path: str | os.PathLike[str], write: Callable[[Path], object]) -> Path:
    """Calls ``write`` on a temporary name beside ``path``, then renames it into place.

    Whatever ``write`` returns (a byte count, say) is ignored.

    A crash leaves either the old file or the new one, never a torn one; the
    temporary file is removed if ``write`` fails. An :class:`OSError` names
    ``path``, never the temporary name, which means nothing to the user.
    """
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(errno.EISDIR, "is a directory; expected a file name", os.fspath(path))
    make_directory(path.parent)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as e:
        raise _named(e, path) from None
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
    except OSError as e:
        tmp_path.unlink(missing_ok=True)
        raise _named(e, path) from None
    except BaseException:
        tmp_path.unlink(missing_ok=True)
        raise
    return path


def write_text_atomically(path: str | os.PathLike[str], text: str) -> Path:
    return write_atomically(path, lambda p: p.write_text(text))


def _named(error: OSError, path: Path) -> OSError:
    """The same error about ``path``, the name the user gave."""
    if error.errno is None:
        return error
    return OSError(error.errno, error.strerror, os.fspath(path))
