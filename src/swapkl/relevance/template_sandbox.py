"""Task templates rendered in a child process, bounded in time, output and memory.

Jinja's sandbox (:func:`template_environment`) keeps a template from reaching Python's internals, but not from
working without end: nested loops over large ranges, a ``regex_replace`` whose pattern backtracks
catastrophically, or ``'x' * 10**10`` run for hours or take all the memory, and no code of the sandbox sees them.
So a task file's templates are rendered by a child Python process (this module's :func:`serve`: the standard
library, jinja2 and swapkl.errors only), one document at a time, under three bounds:

* time: the parent waits :data:`SECONDS` for each rendering and then kills the child;
* output: the child renders as a stream and stops past :data:`MAX_CHARS` characters;
* memory: the child's address space is limited to :data:`MAX_BYTES` (``RLIMIT_AS``), so a huge string fails with
  ``MemoryError`` inside the child.

Each refusal is one line naming the task file, the field and the document (:class:`TemplateRenderer`).
"""

from __future__ import annotations

import json
import os
import re
import resource
import selectors
import subprocess
import sys
import time

from swapkl.errors import SwapKLError

#: seconds one document's rendering may take (lm-eval's templates take microseconds)
SECONDS = 10.0
#: characters one rendered field may have (far beyond any model's context)
MAX_CHARS = 1_000_000
#: the child's address space, in bytes
MAX_BYTES = 2 << 30


def template_environment():
    """The Jinja environment that renders task templates: lm-eval's settings (strict about undefined names, the
    trailing newline kept, its ``regex_replace`` filter), inside Jinja's immutable sandbox. A template reads the
    document's fields and calls the methods of plain values (``.strip()``, ``.split()``, ``|join``...), but cannot
    reach Python's internals (``__globals__``, ``__class__``...) nor change a list or a dict: a task file is data
    and never runs code."""
    import jinja2
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    env = ImmutableSandboxedEnvironment(loader=jinja2.BaseLoader, undefined=jinja2.StrictUndefined,
                                        keep_trailing_newline=True)
    env.filters["regex_replace"] = lambda text, pattern, repl, count=0: re.sub(pattern, repl, text, count=count)
    return env


class _TooLong(Exception):
    pass


def render_bounded(compiled, doc: dict, max_chars: int) -> str:
    """``compiled`` rendered with ``doc``, stopped past ``max_chars`` characters (:class:`_TooLong`)."""
    out, size = [], 0
    for chunk in compiled.generate(**doc):
        size += len(chunk)
        if size > max_chars:
            raise _TooLong
        out.append(chunk)
    return "".join(out)


def _reply(env, compiled: dict, request: dict, max_chars: int) -> dict:
    from jinja2 import TemplateError
    from jinja2.exceptions import SecurityError

    template = request["template"]
    try:
        if template not in compiled:
            compiled[template] = env.from_string(template)
        return {"ok": render_bounded(compiled[template], request["doc"], max_chars)}
    except SecurityError as e:
        return {"error": "security", "message": str(e).rstrip(".")}
    except TemplateError as e:
        return {"error": "template", "message": str(e)}
    except _TooLong:
        return {"error": "size"}
    except MemoryError:
        return {"error": "memory"}
    except Exception as e:  # a template's own failure (a type error, a bad regex): said, never a traceback
        return {"error": "template", "message": f"{type(e).__name__}: {' '.join(str(e).split())}"}


def serve(max_chars: int, max_bytes: int) -> None:
    """The child: one JSON request a line on stdin (``template``, ``doc``), one JSON reply a line on stdout."""
    resource.setrlimit(resource.RLIMIT_AS, (max_bytes, max_bytes))
    env, compiled = template_environment(), {}
    for line in sys.stdin:
        try:
            reply = _reply(env, compiled, json.loads(line), max_chars)
        except MemoryError:
            reply = {"error": "memory"}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


class TemplateRenderer:
    """Renders the templates of one task file in a child process (started at the first template, stopped by
    :meth:`close`); every failure is one line naming the file, the field and the document."""

    def __init__(self, yaml_path: str, *, seconds: float | None = None, max_chars: int | None = None,
                 max_bytes: int | None = None):
        self.yaml_path = yaml_path
        # the module's bounds, read when the renderer is made (None)
        self.seconds = SECONDS if seconds is None else seconds
        self.max_chars = MAX_CHARS if max_chars is None else max_chars
        self.max_bytes = MAX_BYTES if max_bytes is None else max_bytes
        self._child: subprocess.Popen | None = None
        self._buffer = b""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self) -> None:
        if self._child is not None:
            self._child.kill()
            self._child.wait()
            for stream in (self._child.stdin, self._child.stdout):
                stream.close()
            self._child = None

    def render(self, template: str, doc: dict, what: str, where: str) -> str:
        reply = self._ask({"template": template, "doc": doc}, what, where)
        head = f"task file {self.yaml_path!r}: {what}"
        if "ok" in reply:
            return reply["ok"]
        kind = reply["error"]
        if kind == "security":
            raise SwapKLError(f"{head} {template!r} is refused ({where}): {reply['message']}; a task template may only "
                              "read the document's fields")
        if kind == "size":
            raise SwapKLError(f"{head} template {template!r} renders more than {self.max_chars:,} characters "
                              f"({where}); a task template must render a prompt, not build text without bound")
        if kind == "memory":
            raise SwapKLError(f"{head} template {template!r} needs more than {self.max_bytes >> 20:,} MiB of memory "
                              f"to render ({where}); a task template must render a prompt, not build huge values")
        raise SwapKLError(f"{head} template {template!r} fails ({where}): {reply['message']}")

    def _start(self) -> None:
        code = f"from swapkl.relevance.template_sandbox import serve; serve({self.max_chars}, {self.max_bytes})"
        self._child = subprocess.Popen([sys.executable, "-I", "-c", code], stdin=subprocess.PIPE,
                                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self._buffer = b""

    def _ask(self, request: dict, what: str, where: str) -> dict:
        try:
            line = (json.dumps(request) + "\n").encode()
        except (TypeError, ValueError) as e:
            raise SwapKLError(f"task file {self.yaml_path!r} {where}: the document is not plain JSON data: {e}") from e
        if self._child is None:
            self._start()
        try:
            self._child.stdin.write(line)
            self._child.stdin.flush()
            return json.loads(self._read_line())
        except TimeoutError:
            self.close()
            raise SwapKLError(f"task file {self.yaml_path!r}: {what} template {request['template']!r} did not "
                              f"finish rendering within {self.seconds:g} s ({where}); a task template must render "
                              "a document at once, not loop or backtrack without bound") from None
        except (BrokenPipeError, EOFError, ValueError):
            self.close()
            raise SwapKLError(f"task file {self.yaml_path!r}: {what} template {request['template']!r} ended its "
                              f"renderer ({where}), for example by exhausting the memory bound") from None

    def _read_line(self) -> bytes:
        """One reply line from the child, waiting at most :attr:`seconds` (TimeoutError) ; EOFError if it died."""
        deadline = time.monotonic() + self.seconds
        fd = self._child.stdout.fileno()
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while b"\n" not in self._buffer:
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(left):
                    raise TimeoutError
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    raise EOFError
                self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line
