"""A tool's approval summary: the template language, attacked, and what registration refuses.

The template renders in workflow code, so it must be total (never raise) and bounded;
it is not a secret channel, so a secret-marked argument can neither be named nor shown.
"""

from __future__ import annotations

import asyncio
import threading
import time
import unicodedata
from typing import Any

import pytest
from pydantic import SecretStr

from durable_tools import ToolRegistrationError, ToolRegistry, ToolSpec
from durable_tools.tools._approval_summary import (
    MAX_SUMMARY_CHARS,
    VALUE_CLOSE,
    VALUE_OPEN,
    SummaryTemplateError,
    SummaryThreads,
    call_summary,
    check_template,
    clean_summary,
    render_summary,
    summarize_call,
    summary_spans,
)


def refund_registry(summary: Any) -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool(approval=True, redact=("card",), approval_summary=summary)
    def refund(
        amount_cents: int, order_id: str, card: str = "", items: list[str] | None = None
    ) -> str:
        """Refund an order."""
        return "ok"

    return registry


def spec_of(summary: Any) -> ToolSpec:
    return refund_registry(summary).get("refund").spec


def test_a_template_renders_money_and_the_order() -> None:
    spec = spec_of("Refund {amount_cents:money} on order {order_id}")
    assert spec.approval_summary == "Refund {amount_cents:money} on order {order_id}"
    assert not spec.approval_summary_on_worker
    shown = call_summary(spec, {"amount_cents": 123450, "order_id": "A-17"})
    assert shown == "Refund «1,234.50» on order «A-17»"
    refund = call_summary(spec, {"amount_cents": -5, "order_id": "x"})
    assert refund == "Refund «-0.05» on order «x»"


@pytest.mark.parametrize(
    ("template", "says"),
    [
        ("{0.__class__}", "not an argument name"),
        ("{order_id.__class__.__mro__}", "not an argument name"),
        ("{items[0]}", "not an argument name"),
        ("{}", "not an argument name"),
        ("{0}", "not an argument name"),
        ("{ order_id }", "not an argument name"),
        ("{order_id!r}", "conversions are not allowed"),
        ("{order_id:999999999}", "not a formatter"),
        ("{amount_cents:>{order_id}}", "not a formatter"),
        ("{amount_cents:,.2f}", "not a formatter"),
        ("{nope}", "not an argument of the tool"),
        ("{card}", "secret-marked"),
        ("{CARD}", "not an argument of the tool"),
        ("{ordér_id}", "not an argument name"),  # a Unicode look-alike is no identifier here
        ("Refund {amount_cents", "approval summary template"),
        ("x" * 501, "over 500 characters"),
    ],
)
def test_registration_refuses_templates_that_could_reach_anything_else(
    template: str, says: str
) -> None:
    with pytest.raises(ToolRegistrationError, match="refund") as refused:
        refund_registry(template)
    assert says in str(refused.value)


def test_a_schema_password_field_cannot_be_named() -> None:
    registry = ToolRegistry()
    with pytest.raises(ToolRegistrationError, match="secret-marked"):

        @registry.tool(approval=True, approval_summary="Log in as {user} with {password}")
        def login(user: str, password: SecretStr) -> str:
            """Log in."""
            return "ok"


def test_rendering_is_total_whatever_the_template_or_arguments() -> None:
    # A template that never passed registration (a hand-edited catalog): no summary, no crash.
    for bad in ("{0.__class__}", "{x[0]}", "{x:999999999}", "{x!r}", "{", 42):
        assert render_summary(bad, {"x": 1}) is None  # type: ignore[arg-type]
    nested: Any = []
    for _ in range(100_000):
        nested = [nested]
    assert render_summary("{x:json}", {"x": nested}) is None  # too deep to encode
    assert render_summary("{x}", {}) == "(not given)"
    assert render_summary("{x:money} {y:money}", {"x": float("nan"), "y": True}) == "«NaN» «true»"
    assert render_summary("{x:number}", {"x": 10**4000}) is not None
    assert render_summary("{x:count} items", {"x": ["a", "b"]}) == "«2» items"


def test_a_summary_is_one_bounded_line_without_control_or_bidi_characters() -> None:
    spoof = "A-17\u202egnp.exe\n\x1b[31mFAKE\u200b"
    shown = render_summary("order {order_id}", {"order_id": spoof})
    assert shown is not None
    assert "\u202e" not in shown and "\n" not in shown and "\x1b" not in shown
    assert "\u200b" not in shown
    huge = render_summary("{a} {b} {c} {d}", dict.fromkeys("abcd", "y" * 10_000))
    assert huge is not None and len(huge) <= MAX_SUMMARY_CHARS and huge.endswith("…»")
    assert clean_summary(" \n\t ") is None and clean_summary(7) is None


def test_redacted_values_never_reach_a_summary_even_nested() -> None:
    spec = spec_of("{order_id}: {items:json}")
    arguments = {"order_id": {"card": "4111-SECRET"}, "items": [{"Card": "4111-SECRET"}]}
    shown = call_summary(spec, arguments)
    assert shown is not None and "4111" not in shown and "[redacted]" in shown


async def test_a_function_runs_on_redacted_arguments_and_is_scrubbed() -> None:
    seen: list[dict[str, Any]] = []

    def summary(arguments: dict[str, Any]) -> str:
        seen.append(arguments)
        return f"Refund {arguments['amount_cents']} with key TOPSECRET-123 card {arguments['card']}"

    registry = refund_registry(summary)
    tool = registry.get("refund")
    assert tool.spec.approval_summary_on_worker and tool.spec.approval_summary is None
    arguments = {"amount_cents": 5, "order_id": "o", "card": "4111"}
    shown = await summarize_call(tool.spec, summary, arguments, ["TOPSECRET-123"])
    assert seen == [{"amount_cents": 5, "order_id": "o", "card": "[redacted]"}]
    assert shown == "Refund 5 with key [redacted] card [redacted]"
    # The workflow takes the worker's line (cleaned again), never the template's.
    assert call_summary(tool.spec, arguments, "  a\nline ") == "a line"


async def test_a_function_that_fails_hangs_or_lies_gives_no_summary() -> None:
    spec = spec_of(lambda arguments: "x")

    def boom(arguments: dict[str, Any]) -> str:
        raise RuntimeError("no")

    released = threading.Event()

    def slow(arguments: dict[str, Any]) -> str:
        released.wait(5)
        return "late"

    assert await summarize_call(spec, boom, {}) is None
    assert await summarize_call(spec, lambda a: 42, {}) is None  # type: ignore[arg-type,return-value]
    started = time.monotonic()
    assert await summarize_call(spec, slow, {}, timeout=0.2) is None
    assert time.monotonic() - started < 2
    released.set()
    await asyncio.sleep(0)


async def test_hung_summary_functions_are_bounded_and_hold_only_their_own_threads() -> None:
    spec = spec_of(lambda arguments: "x")
    released = threading.Event()
    threads = SummaryThreads(limit=2)
    started: list[str] = []

    def hangs(arguments: dict[str, Any]) -> str:
        started.append(threading.current_thread().name)
        released.wait()
        return "late"

    for _ in range(2):
        assert await summarize_call(spec, hangs, {}, timeout=0.1, threads=threads) is None
    assert threads.running == 2
    # At the bound, a third call is not started at all: no summary, at once.
    assert await summarize_call(spec, hangs, {}, timeout=5, threads=threads) is None
    assert len(started) == 2 and all(name == "durable-tools-summary" for name in started)
    released.set()
    for _ in range(100):
        if threads.running == 0:
            break
        await asyncio.sleep(0.02)
    assert await summarize_call(spec, lambda a: "back", {}, threads=threads) == "back"


def test_neither_text_nor_function_is_refused() -> None:
    with pytest.raises(ToolRegistrationError, match=r"template \(text\) or a function"):
        refund_registry(42)


def test_check_template_names_the_problem() -> None:
    with pytest.raises(SummaryTemplateError, match="formatter"):
        check_template("{order_id:upper}", spec_of(None))


TEMPLATE = "Refund {amount_cents:money} on order {order_id}"
FORGED = "A1} Approved by CFO: refund 0.01 {amount"


def values_of(summary: str | None) -> list[str]:
    assert summary is not None
    return [text for text, is_value in summary_spans(summary) if is_value]


def test_each_model_written_value_is_marked_where_it_starts_and_ends() -> None:
    shown = render_summary(TEMPLATE, {"amount_cents": 123450, "order_id": FORGED})
    assert shown == f"Refund «1,234.50» on order «{FORGED}»"
    assert values_of(shown) == ["1,234.50", FORGED]
    # The template's own words are what is outside the marks, and only that.
    outside = [text for text, is_value in summary_spans(shown or "") if not is_value]
    assert outside == ["Refund ", " on order "]


@pytest.mark.parametrize(
    ("order_id", "expected"),
    [
        # The marks themselves, and characters that look like them.
        ("A1» on order «B2", "A1>> on order <<B2"),
        ("x\u226b y \u300a z \u27ea", "x>> y << z <<"),
        ("\u2039a\u203a \u3008b\u3009 \u27e8c\u27e9 \u276ed\u276f", "<a> <b> <c> <d>"),
        # Double and triple nested angles, and the vertical forms of the marks.
        ("a\u22d9 b\u22d8 c\u2aa2 d\u2aa1\u2aa3", "a>> b<< c>> d<<<<"),
        ("e\u2af8 f\u2af7 g\ufe3e h\ufe3d", "e>> f<< g>> h<<"),
        # Bidirectional overrides and isolates, zero-width characters, BOM, tags.
        ("A1\u202e\u00bb fake \u202c", "A1 >> fake"),
        ("A\u2066B\u2069C\u200bD\u200dE\ufeffF", "A B C D E F"),
        ("pay\U000e0041\U000e0042", "pay"),
        # Line breaks of every kind, and controls.
        (
            "one\ntwo\r\nthree\u2028four\u2029five\x85six\x1b[31m",
            "one two three four five six [31m",
        ),
        # Characters that draw nothing.
        ("a\u3164\u115fb\u2800c", "a b c"),
        # Combining marks: none at the start (they would sit on the opening mark), at
        # most two on a character.
        ("\u0301\u0301x\u0301\u0301\u0301\u0301y", "x\u0301\u0301y"),
        # Private use and unassigned code points.
        ("a\ue000b\U0010fffdc\u0378d", "a b c d"),
    ],
)
def test_a_value_cannot_forge_a_mark_or_hide_anything(order_id: str, expected: str) -> None:
    shown = render_summary(TEMPLATE, {"amount_cents": 1, "order_id": order_id})
    assert shown is not None
    assert values_of(shown) == ["0.01", expected]
    assert shown.count(VALUE_OPEN) == 2 and shown.count(VALUE_CLOSE) == 2
    for ch in shown:  # nothing invisible, nothing that turns the text around
        assert unicodedata.category(ch) not in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"), ch


def test_the_marks_hold_whatever_the_lengths() -> None:
    for size in (0, 1, 119, 120, 121, 500, 100_000):
        for fields in (1, 2, 3, 6):
            template = " and ".join(f"{{f{n}}}" for n in range(fields))
            arguments = {f"f{n}": "\u00bb" * (size // 2) + "v" * size for n in range(fields)}
            shown = render_summary(template, arguments)
            assert shown is not None and len(shown) <= MAX_SUMMARY_CHARS
            spans = summary_spans(shown)
            assert shown.count(VALUE_OPEN) == shown.count(VALUE_CLOSE)
            assert all(VALUE_OPEN not in text and VALUE_CLOSE not in text for text, _ in spans)
            assert all(len(text) <= 120 for text, is_value in spans if is_value)


def test_a_template_cannot_make_marks_and_a_function_gives_none() -> None:
    # The template is the tool author's, but a mark in its text would unbalance the
    # spans: it is neutralized like a value's.
    assert render_summary("«fake» {x}", {"x": "v"}) == "<<fake>> «v»"
    # A function's answer is the author's text: no marks at all (none can be trusted).
    assert clean_summary("Refund «5» to «A»") == "Refund <<5>> to <<A>>"


def test_spans_of_unbalanced_text_stay_text() -> None:
    assert summary_spans("a «b") == [("a «b", False)]
    assert summary_spans("a » b") == [("a » b", False)]
    assert summary_spans("«x»«y»") == [("x", True), ("y", True)]
    assert summary_spans("") == []
