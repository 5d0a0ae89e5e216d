"""Work done in the prompt's own thread while it waits for a line.

GNU readline edits its line buffer in the thread that called input(), with the GIL released. Reading that buffer
from another thread (to draw the prompt again, with what was typed, under an alert that arrived meanwhile) races
with the typing, and glibc aborts the whole process (`mbsrtowcs: Assertion ... failed`, measured: within a second
of reading it while a line is being typed). Python's readline calls PyOS_InputHook between keystrokes, and every
0.1 s while one is set, in the thread that waits for the line: what `soon` hands over runs there, where the buffer is
safe to read. The hook is CPython's documented one (tkinter and IPython set it the same way); one already set by
someone else is left as it is, and `installed()` says so.
"""

from __future__ import annotations

import ctypes
import logging
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)

_lock = threading.Lock()
_pending: list[Callable[[], None]] = []
_hook: object | None = None  # the C callback, kept alive while it is set


def _run() -> int:
    with _lock:
        work = list(_pending)
        _pending.clear()
    for fn in work:
        try:
            fn()
        except Exception:  # noqa: BLE001 - a redraw that fails must not end the prompt
            log.debug("input hook work failed", exc_info=True)
    return 0


def install() -> bool:
    """Set the hook (once per process); whether work handed to `soon` runs in the prompt's thread."""
    global _hook
    if _hook is not None:
        return True
    try:
        slot = ctypes.c_void_p.in_dll(ctypes.pythonapi, "PyOS_InputHook")
    except (AttributeError, ValueError, OSError):  # not CPython
        return False
    if slot.value:  # someone else's (tkinter's): theirs stays
        return False
    hook = ctypes.CFUNCTYPE(ctypes.c_int)(_run)
    slot.value = ctypes.cast(hook, ctypes.c_void_p).value
    _hook = hook
    return True


def installed() -> bool:
    return _hook is not None


def soon(fn: Callable[[], None]) -> None:
    """Run `fn` in the prompt's thread at its next keystroke or within 0.1 s (while it waits for a line)."""
    with _lock:
        _pending.append(fn)
