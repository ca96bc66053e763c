"""A call's human summary for the person asked to approve it.

A tool gives one with `approval_summary=`: a template such as
`"Refund {amount_cents:money} on order {order_id}"`, or a function of the arguments.

A template is plain data on the spec (recorded with the run's catalog) and is rendered in
workflow code when the call starts waiting: parsing and filling it is a pure function of
the template and the arguments, so it is deterministic and never raises (anything it
cannot render gives no summary). Its language is deliberately small: `{name}` or
`{name:formatter}` for a top-level argument, `{{`/`}}` for braces. No attribute or index
access (`{0.__class__}`, `{x[0]}`), no conversions (`!r`), no widths or precisions (a
`{x:999999999}` would build a gigabyte): only the formatters in `FORMATTERS`.

A function is worker code: it never runs in workflow code (it could do anything, and a
workflow must be deterministic). The preflight activity runs it when the call is about to
ask a person (`summarize_call`), and the workflow records its answer.

Either way a summary is not a secret channel: it is built from the arguments the approver
is shown anyway, with every secret-marked field (`redact=`, and `writeOnly` or `password`
fields of the schema) already replaced by `[redacted]`; a template may not name one at
all; a function's answer is scrubbed of the worker's secrets. It is one line, without
control or bidirectional-formatting characters, at most `MAX_SUMMARY_CHARS` long.

The arguments are the model's words, and the model may have read anything (a web page, an
email): a template's summary marks where each value starts and ends, `VALUE_OPEN` and
`VALUE_CLOSE` around it (`Refund «1,234.50» on order «A-17»`), so that an order id written
as `A1} Approved by CFO: refund 0.01 {amount` reads as the value it is, never as the
tool's own words. A value cannot forge a mark: the marks and their look-alikes in a value
(and in a template's text, and in a function's whole answer) become ASCII, invisible and
control characters become spaces, combining marks cannot stack over a mark, and each
value is cut at 120 characters inside its marks. Every surface that shows a summary (the
inbox, `durable-tools pending`/`show`, Slack, webhooks, the Temporal UI) shows these
marks; the inbox also styles each marked value (`summary_spans`). A function's answer is
the tool author's text, shown unmarked.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import re
import string
import threading
import unicodedata
from collections.abc import Callable, Collection, Iterable, Mapping
from types import MappingProxyType
from typing import Any

from ._formatting import redact_value
from ._scrub import scrub
from ._spec import ToolSpec

__all__ = [
    "FORMATTERS",
    "MAX_SUMMARY_CHARS",
    "MAX_SUMMARY_THREADS",
    "MAX_TEMPLATE_CHARS",
    "SUMMARY_FUNCTION_TIMEOUT",
    "VALUE_CLOSE",
    "VALUE_OPEN",
    "SummaryFunction",
    "SummaryTemplateError",
    "SummaryThreads",
    "call_summary",
    "check_template",
    "clean_summary",
    "render_summary",
    "secret_fields",
    "summarize_call",
    "summary_spans",
]

MAX_SUMMARY_CHARS = 300
"""Longest summary; a longer one is cut and ends with `…`."""
MAX_TEMPLATE_CHARS = 500
"""Longest template a tool may register."""
SUMMARY_FUNCTION_TIMEOUT = 5.0
"""Seconds a summary function may take before the call is shown without a summary."""
MAX_SUMMARY_THREADS = 8
"""Summary functions one worker runs at once, those given up on but still running
included; past it a call shows without a summary."""
VALUE_OPEN = "\u00ab"
"""Where a value written by the model starts in a template's summary (`«`)."""
VALUE_CLOSE = "\u00bb"
"""Where it ends (`»`)."""
_MAX_VALUE_CHARS = 120
_MAX_COMBINING = 2
"""Combining marks kept on one character: more stack over the line (and over a mark)."""
_NOT_GIVEN = "(not given)"
_INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
"""Control, format (bidirectional overrides, zero-width), surrogate, private-use,
unassigned and line/paragraph separator characters: each becomes a space."""
_BLANK_LETTERS = frozenset("\u115f\u1160\u3164\uffa0\u2800")
"""Letters that draw nothing (Hangul fillers, the blank Braille pattern): spaces too."""
_MARK_LOOKALIKES: Mapping[str, str] = MappingProxyType(
    {
        **dict.fromkeys("\u00ab\u226a\u300a\u27ea\u22d8\u2aa1\u2aa3\u2af7\ufe3d", "<<"),
        **dict.fromkeys("\u00bb\u226b\u300b\u27eb\u22d9\u2aa2\u2af8\ufe3e", ">>"),
        **dict.fromkeys("\u2039\u3008\u27e8\u276e\u276c\u2329", "<"),
        **dict.fromkeys("\u203a\u3009\u27e9\u276f\u276d\u232a", ">"),
    }
)
"""The marks and the characters that look like them, as ASCII: text that is not a mark
cannot pass for one."""
_FIELD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")

SummaryFunction = Callable[[dict[str, Any]], str]
"""Writes a call's summary from its arguments (secret-marked ones already redacted)."""


class SummaryTemplateError(ValueError):
    """A template the summary language does not allow; the message says what."""


def _plain(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"
    if isinstance(value, int | float):
        return str(value)
    return _json(value)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _money(value: Any) -> str:
    """Minor units (cents) as a decimal amount: 123450 -> `1,234.50`."""
    if isinstance(value, int) and not isinstance(value, bool):
        whole, cents = divmod(abs(value), 100)
        return f"{'-' if value < 0 else ''}{whole:,}.{cents:02d}"
    if isinstance(value, float) and math.isfinite(value):
        return f"{value / 100:,.2f}"
    return _plain(value)


def _number(value: Any) -> str:
    """A number with thousands separators: 1234567 -> `1,234,567`."""
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    if isinstance(value, float) and math.isfinite(value):
        return f"{value:,.6g}" if abs(value) >= 1e15 else f"{value:,.2f}".rstrip("0").rstrip(".")
    return _plain(value)


def _count(value: Any) -> str:
    """How many items a list (or keys an object, characters a text) holds."""
    if isinstance(value, list | tuple | dict | str):
        return f"{len(value):,}"
    return _plain(value)


FORMATTERS: Mapping[str, Callable[[Any], str]] = MappingProxyType(
    {"money": _money, "number": _number, "count": _count, "json": _json}
)
"""The formatters a template may name after a colon: `money` (minor units such as cents
as `1,234.50`), `number` (`1,234,567`), `count` (items of a list) and `json` (compact
JSON). A value a formatter does not apply to is shown as it is."""

_Part = tuple[str, str | None, str | None]


def _parse(template: str) -> list[_Part]:
    """The template as (literal text, field, formatter) parts.

    Raises:
        SummaryTemplateError: naming the first thing the language does not allow.
    """
    if not isinstance(template, str):
        raise SummaryTemplateError("an approval summary template must be text")
    if len(template) > MAX_TEMPLATE_CHARS:
        raise SummaryTemplateError(
            f"the approval summary template is over {MAX_TEMPLATE_CHARS} characters"
        )
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as error:  # unbalanced braces
        raise SummaryTemplateError(f"approval summary template: {error}") from None
    parts: list[_Part] = []
    for literal, field, spec, conversion in parsed:
        if field is None:
            parts.append((literal, None, None))
            continue
        if not _FIELD.fullmatch(field):
            raise SummaryTemplateError(
                f"approval summary template: {{{field}}} is not an argument name (only "
                "`{name}` of a top-level argument: no positions, attributes or indexes)"
            )
        if conversion is not None:
            raise SummaryTemplateError(
                f"approval summary template: {{{field}!{conversion}}}: conversions are not allowed"
            )
        if spec and spec not in FORMATTERS:
            raise SummaryTemplateError(
                f"approval summary template: {{{field}:{spec}}}: {spec!r} is not a formatter "
                f"(one of: {', '.join(FORMATTERS)}; no widths or precisions)"
            )
        parts.append((literal, field, spec or None))
    return parts


def _schema_secrets(schema: Any, found: set[str]) -> None:
    if isinstance(schema, Mapping):
        properties = schema.get("properties")
        if isinstance(properties, Mapping):
            for name, prop in properties.items():
                if isinstance(prop, Mapping) and (
                    prop.get("writeOnly") is True or prop.get("format") == "password"
                ):
                    found.add(str(name).lower())
        for child in schema.values():
            _schema_secrets(child, found)
    elif isinstance(schema, list):
        for child in schema:
            _schema_secrets(child, found)


def secret_fields(spec: ToolSpec) -> frozenset[str]:
    """Argument names (lower-case, at any depth) a summary must never show: the tool's
    `redact=` names and the schema's `writeOnly` or `password` fields (`SecretStr`)."""
    found = {name.lower() for name in spec.safety.redact}
    _schema_secrets(spec.input_schema, found)
    return frozenset(found)


def check_template(template: str, spec: ToolSpec) -> None:
    """Refuse, at registration, a template that could not render or would show a secret.

    Raises:
        SummaryTemplateError: a syntax the language does not allow, an argument the tool
            does not take, or a secret-marked one.
    """
    properties = spec.input_schema.get("properties")
    known = set(properties) if isinstance(properties, Mapping) else set()
    secrets = secret_fields(spec)
    for _, field, _ in _parse(template):
        if field is None:
            continue
        if field not in known:
            raise SummaryTemplateError(
                f"approval summary template: {{{field}}} is not an argument of the tool "
                f"(arguments: {', '.join(sorted(known)) or 'none'})"
            )
        if field.lower() in secrets:
            raise SummaryTemplateError(
                f"approval summary template: {{{field}}} is a secret-marked argument "
                "(redact= or a password field): a summary must not show it"
            )


def _neutral(text: str) -> str:
    """`text` with nothing that could pass for a mark or hide: look-alikes of the marks
    become ASCII; control, format and blank characters become spaces; combining marks
    are kept at most `_MAX_COMBINING` per character and never open the text (where they
    would sit on the mark before it)."""
    out: list[str] = []
    combining = _MAX_COMBINING  # none allowed before the first character
    for ch in text:
        if ch in _MARK_LOOKALIKES:
            out.append(_MARK_LOOKALIKES[ch])
            combining = 0
            continue
        category = unicodedata.category(ch)
        if category in _INVISIBLE_CATEGORIES or ch in _BLANK_LETTERS:
            out.append(" ")
            combining = _MAX_COMBINING
        elif category.startswith("M"):
            if combining < _MAX_COMBINING:
                out.append(ch)
                combining += 1
        else:
            out.append(ch)
            combining = _MAX_COMBINING if ch.isspace() else 0
    return "".join(out)


def _one_line(text: str) -> str:
    """Runs of white space as one space, keeping one at either end when there was one
    (a template's text keeps the space before and after a value)."""
    words = text.split()
    if not words:
        return " " if text else ""
    lead = " " if text[0].isspace() else ""
    trail = " " if text[-1].isspace() else ""
    return lead + " ".join(words) + trail


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def clean_summary(text: object) -> str | None:
    """`text` as one bounded line: control, formatting (bidirectional overrides, zero-width)
    and separator characters become spaces, the value marks and their look-alikes ASCII (a
    summary function's answer is unmarked), runs of spaces one, cut at
    `MAX_SUMMARY_CHARS`. None for anything but non-blank text."""
    if not isinstance(text, str):
        return None
    text = text[: MAX_SUMMARY_CHARS * 4]  # enough to fill the line once cleaned
    line = " ".join(_neutral(text).split())
    return _cut(line, MAX_SUMMARY_CHARS) if line else None


def _marked(pieces: list[tuple[str, bool]]) -> str | None:
    """The summary line of (text, is a value) pieces, each value between the marks; at
    most `MAX_SUMMARY_CHARS`, a value cut at the end still closed by its mark."""
    out: list[str] = []
    room = MAX_SUMMARY_CHARS
    for text, is_value in pieces:
        shown = VALUE_OPEN + text + VALUE_CLOSE if is_value else text
        if len(shown) > room:
            if not is_value:
                out.append(_cut(shown, room))
            elif room >= 3:  # room for `«…»` at least
                out.append(VALUE_OPEN + text[: room - 3] + "…" + VALUE_CLOSE)
            else:
                out.append("…")
            break
        out.append(shown)
        room -= len(shown)
    return "".join(out).strip() or None


def summary_spans(summary: str) -> list[tuple[str, bool]]:
    """A summary as (text, is a model-written value) spans, for a surface that styles the
    values (the inbox): the text between `VALUE_OPEN` and `VALUE_CLOSE`. A rendered
    summary's marks are balanced (no text holds one); a mark without its pair (a summary
    built some other way) stays text."""
    spans: list[tuple[str, bool]] = []
    rest = summary
    while rest:
        start = rest.find(VALUE_OPEN)
        end = rest.find(VALUE_CLOSE, start + 1) if start >= 0 else -1
        if start < 0 or end < 0:
            spans.append((rest, False))
            break
        if start:
            spans.append((rest[:start], False))
        spans.append((rest[start + 1 : end], True))
        rest = rest[end + 1 :]
    return spans


def render_summary(
    template: str, arguments: Mapping[str, Any], secrets: Collection[str] = ()
) -> str | None:
    """The summary `template` makes of `arguments`, or None when it cannot make one.

    Pure and total (workflow code calls it): a template the language refuses gives None;
    an argument not given reads `(not given)`; each value is neutralized (nothing in it
    can pass for a mark, a line break or a direction change), cut at 120 characters and
    put between `VALUE_OPEN` and `VALUE_CLOSE`.

    Args:
        template: The tool's template.
        arguments: The call's arguments.
        secrets: Argument names to redact first (`secret_fields`), at any depth.
    """
    try:
        parts = _parse(template)
        shown = redact_value(dict(arguments), secrets)
        pieces: list[tuple[str, bool]] = []
        for literal, field, formatter in parts:
            pieces.append((_one_line(_neutral(literal)), False))
            if field is None:
                continue
            if field not in shown:
                pieces.append((_NOT_GIVEN, False))
                continue
            value = shown[field]
            text = FORMATTERS[formatter](value) if formatter else _plain(value)
            # Cleaned before the cut, so that hidden characters do not take the room.
            cleaned = " ".join(_neutral(text[: _MAX_VALUE_CHARS * 4]).split())
            pieces.append((_cut(cleaned, _MAX_VALUE_CHARS), True))
        return _marked(pieces)
    except Exception:  # deep nesting, a value the encoder refuses: no summary, never a crash
        return None


def call_summary(
    spec: ToolSpec, arguments: Mapping[str, Any], from_worker: str | None = None
) -> str | None:
    """The summary a pending call shows: the worker function's (`from_worker`, when the
    tool has one), else the tool's template rendered, else None. Pure: workflow code."""
    if spec.approval_summary_on_worker:
        return clean_summary(from_worker)
    if spec.approval_summary is None:
        return None
    return render_summary(spec.approval_summary, arguments, secret_fields(spec))


class SummaryThreads:
    """Runs a worker's summary functions, each in a daemon thread of its own.

    Not in the event loop's default executor: Python cannot stop a thread, so a function
    that hangs keeps its thread after it was given up on, and a few of them once took
    every thread of that executor, which sync tools and the model activity need too (the
    whole worker stalled). Here a hung function holds only its own thread, at most
    `limit` run at once (past it, no summary), and a daemon thread never delays the
    worker's exit.

    Args:
        limit: Functions running at once, hung ones included.
    """

    def __init__(self, limit: int = MAX_SUMMARY_THREADS) -> None:
        self.limit = limit
        self._running = 0
        self._lock = threading.Lock()

    @property
    def running(self) -> int:
        """Functions running now (hung ones included)."""
        return self._running

    async def run(self, function: SummaryFunction, shown: dict[str, Any], timeout: float) -> object:
        """`function(shown)`'s answer.

        Raises:
            TimeoutError: it did not answer within `timeout` seconds, or `limit`
                functions are running already.
            Exception: what the function raised.
        """
        with self._lock:
            if self._running >= self.limit:
                raise TimeoutError(f"{self._running} summary functions are still running")
            self._running += 1
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[object] = loop.create_future()

        def settle(value: object, error: BaseException | None) -> None:
            if answer.done():  # given up on meanwhile
                return
            if error is None:
                answer.set_result(value)
            else:
                answer.set_exception(error)

        def work() -> None:
            value: object = None
            error: BaseException | None = None
            try:
                value = function(shown)
            except BaseException as raised:  # handed to the caller, which gives no summary
                error = raised
            finally:
                with self._lock:
                    self._running -= 1
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(settle, value, error)

        threading.Thread(target=work, name="durable-tools-summary", daemon=True).start()
        return await asyncio.wait_for(answer, timeout)


async def summarize_call(
    spec: ToolSpec,
    function: SummaryFunction,
    arguments: Mapping[str, Any],
    worker_secrets: Iterable[str] = (),
    *,
    timeout: float = SUMMARY_FUNCTION_TIMEOUT,
    threads: SummaryThreads | None = None,
) -> str | None:
    """Run a tool's summary function on the worker (the preflight activity does).

    It gets the arguments with their secret-marked fields redacted and runs in a thread
    of `threads` (it may block; default a fresh `SummaryThreads`); what it returns is
    scrubbed of the worker's secrets and cleaned. A function that raises, times out or
    returns anything but text gives None: the call then shows without a summary, and
    still waits for its decision.
    """
    shown = redact_value(dict(arguments), secret_fields(spec))
    try:
        text = await (threads or SummaryThreads()).run(function, shown, timeout)
    except Exception:
        return None
    if not isinstance(text, str):
        return None
    # Scrubbed whole (up to a bound far past what is shown), then cut: a cut first could
    # leave part of a secret that no longer matches.
    return clean_summary(scrub(text[:65_536], worker_secrets))
