"""Malformed tool calls from the model: no crash, nothing invalid runs, every call answered.

The server-side part drives a scripted model through a corpus of bad calls; the property
part checks the validation functions the workflow relies on, without a server.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated, Any

from hypothesis import HealthCheck, given, settings, strategies as st
from jsonschema import Draft202012Validator
from temporalio.client import Client

from durable_tools import (
    AgentConfig,
    DurableTools,
    Injected,
    InvalidArguments,
    Limits,
    RunStatus,
    ToolContext,
    ToolRegistry,
)
from durable_tools.tools._validation import MAX_DEPTH, parse_arguments, validate_arguments
from support import (
    answer,
    assert_not_wedged,
    calls,
    running_worker,
    scheduled_activities,
    write_script,
)

HUGE = "x" * 100_000
DEEP = 100_000


def make_registry(executed: list[tuple[str, Any, Any]]) -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool(read_only=True)
    def echo(
        text: str,
        ctx: ToolContext,
        token: Annotated[str, Injected("token", secret=True)],
        count: int = 1,
    ) -> str:
        """Echo a text's length.

        Args:
            text: Any text.
            count: How many times.
        """
        executed.append((ctx.tool_call_id, text, count))
        return f"{len(text)} chars x{count}"

    @registry.tool(read_only=True)
    def store(
        ctx: ToolContext, limit: float | None = None, data: dict[str, Any] | None = None
    ) -> str:
        """Keep some data under a size limit.

        Args:
            limit: The most bytes to use; none for no limit.
            data: Any JSON object.
        """
        executed.append((ctx.tool_call_id, data, limit))
        return "stored"

    return registry


# (call id, tool name, raw arguments as the model wrote them, should it run?)
CORPUS: list[tuple[str, str, str, bool]] = [
    ("ok_plain", "echo", '{"text": "hello"}', True),
    ("ok_huge", "echo", json.dumps({"text": HUGE}), True),
    ("ok_nul_escaped", "echo", '{"text": "a\\u0000b"}', True),
    ("ok_rtl", "echo", '{"text": "\u202eevil\u202c \u200f"}', True),
    ("ok_emoji_zwj", "echo", '{"text": "\U0001f469\u200d\U0001f4bb \ufeff"}', True),
    ("ok_count_integral", "echo", '{"text": "a", "count": 2.0}', True),
    ("ok_store", "store", '{"limit": 1.5, "data": {"a": [1, 2.0]}}', True),
    # The deepest nesting allowed (the top-level object is level 1), and one level more.
    (
        "ok_store_deep",
        "store",
        '{"data": ' + '{"a":' * (MAX_DEPTH - 1) + "1" + "}" * MAX_DEPTH,
        True,
    ),
    ("bad_truncated", "echo", '{"text": "a", ', False),
    ("bad_empty", "echo", "", False),
    ("bad_whitespace", "echo", " \n\t", False),
    ("bad_array", "echo", '["hello"]', False),
    ("bad_string", "echo", '"hello"', False),
    ("bad_null", "echo", "null", False),
    ("bad_number", "echo", "42", False),
    ("bad_single_quotes", "echo", "{'text': 'a'}", False),
    ("bad_trailing_comma", "echo", '{"text": "a",}', False),
    ("bad_two_objects", "echo", '{"text": "a"}{"text": "b"}', False),
    ("bad_type", "echo", '{"text": 5}', False),
    ("bad_count_string", "echo", '{"text": "a", "count": "2"}', False),
    ("bad_count_float", "echo", '{"text": "a", "count": 1.5}', False),
    ("bad_count_bool", "echo", '{"text": "a", "count": true}', False),
    ("bad_missing", "echo", '{"count": 2}', False),
    ("bad_huge_garbage", "echo", HUGE, False),
    ("bad_huge_unterminated", "echo", '{"text": "' + HUGE, False),
    ("bad_nan", "echo", '{"text": "a", "count": NaN}', False),
    ("bad_infinity", "echo", '{"text": "a", "count": -Infinity}', False),
    ("bad_overflow", "echo", '{"text": "a", "count": 1e999}', False),
    ("bad_limit_overflow", "store", '{"limit": 1e400}', False),
    ("bad_limit_overflow_negative", "store", '{"limit": -1e999}', False),
    ("bad_data_overflow", "store", '{"data": {"a": [1, 1e400]}}', False),
    (
        "bad_data_deep",
        "store",
        '{"data": ' + '{"a":' * MAX_DEPTH + "1" + "}" * (MAX_DEPTH + 1),
        False,
    ),
    ("bad_many_digits", "echo", '{"text": "a", "count": 1' + "0" * 5000 + "}", False),
    ("bad_duplicate", "echo", '{"text": "a", "text": "b"}', False),
    ("bad_raw_nul", "echo", '{"text": "a\x00b"}', False),
    ("bad_raw_newline", "echo", '{"text": "a\nb"}', False),
    ("bad_deep", "echo", '{"text": ' + "[" * DEEP + "]" * DEEP + "}", False),
    ("bad_deep_object", "echo", '{"text": "a", "x": ' + '{"a":' * 5000 + "1" + "}" * 5001, False),
    ("smuggle_ctx", "echo", '{"text": "a", "ctx": {"idempotency_key": "x"}}', False),
    ("smuggle_injected", "echo", '{"text": "a", "token": "attacker"}', False),
    ("smuggle_private", "echo", '{"text": "a", "_progress": null}', False),
    ("smuggle_proto", "echo", '{"text": "a", "__class__": "x"}', False),
    ("unknown_tool", "delete_everything", "{}", False),
    ("unknown_case", "ECHO", '{"text": "a"}', False),
    ("unknown_rtl", "echo\u200f", '{"text": "a"}', False),
    ("unknown_space", "echo ", '{"text": "a"}', False),
    ("unknown_core_activity", "durable_tools.model", "{}", False),
    ("unknown_catalog", "durable_tools.catalog", "{}", False),
    ("unknown_packed_catalog", "durable_tools.catalog_packed", "{}", False),
    ("unknown_callback_result", "durable_tools.callback_result", "{}", False),
    ("unknown_search", "search_tools", '{"query": "echo"}', False),
]


async def test_corpus_of_malformed_calls(client: Client, task_queue: str, tmp_path: Path) -> None:
    executed: list[tuple[str, Any, Any]] = []
    per_turn = 8
    steps: list[dict[str, Any]] = [
        {
            "tool_calls": [
                {"id": cid, "name": name, "arguments": raw}
                for cid, name, raw, _ in CORPUS[i : i + per_turn]
            ]
        }
        for i in range(0, len(CORPUS), per_turn)
    ]
    config = AgentConfig(
        model=write_script(tmp_path, [*steps, answer("survived")]),
        limits=Limits(max_turns=len(steps) + 1, max_tool_calls=len(CORPUS)),
    )
    async with running_worker(
        client, make_registry(executed), task_queue, secrets={"token": "worker-token"}
    ):
        run = await DurableTools(client, task_queue).start("be nasty", config=config)
        result = await run.result()
        conversation = await run.conversation()
        timeline = {r.call_id: r for r in await run.timeline()}
        await assert_not_wedged(run.handle, allowed=0)
    assert result.status == RunStatus.COMPLETED and result.final_answer == "survived"

    valid = {cid for cid, _, _, ok in CORPUS if ok}
    invalid = {cid for cid, _, _, ok in CORPUS if not ok}
    assert {cid for cid, _, _ in executed} == valid  # only valid calls ran, each once
    assert len(executed) == len(valid)
    ran = {cid: (text, count) for cid, text, count in executed}
    assert ran["ok_huge"] == (HUGE, 1)
    assert ran["ok_nul_escaped"] == ("a\x00b", 1)
    # JSON Schema counts 2.0 as an integer: the tool gets an int, and the history records it.
    assert ran["ok_count_integral"] == ("a", 2) and type(ran["ok_count_integral"][1]) is int
    assert ran["ok_store"] == ({"a": [1, 2.0]}, 1.5)  # no integer in the schema: left alone

    history = await run.handle.fetch_history()
    scheduled = scheduled_activities(history)
    assert scheduled.count("echo") + scheduled.count("store") == len(valid)
    inputs = [
        json.loads(payload.data)
        for event in history.events
        if event.HasField("activity_task_scheduled_event_attributes")
        for payload in event.activity_task_scheduled_event_attributes.input.payloads
    ]
    recorded = [i["arguments"] for i in inputs if i.get("call_id") == "ok_count_integral"]
    assert recorded == [{"text": "a", "count": 2}] and type(recorded[0]["count"]) is int

    replies = {m.tool_call_id: m.content or "" for m in conversation if m.role == "tool"}
    assert set(replies) == {cid for cid, *_ in CORPUS}  # every call id got an answer
    for cid in invalid:
        assert timeline[cid].status == "invalid", (cid, timeline[cid])
        assert cid in replies[cid], (cid, replies[cid])  # the repair names the call
        assert len(replies[cid]) < 4_000, cid  # bounded, even for 100 KB of garbage
    for cid in ("bad_limit_overflow", "bad_limit_overflow_negative", "bad_data_overflow"):
        assert "out of range" in replies[cid], replies[cid]
    assert f"limit of {MAX_DEPTH} levels" in replies["bad_data_deep"]
    assert "delete_everything" in replies["unknown_tool"]
    assert "echo" in replies["unknown_tool"]  # the tools that do exist are listed
    for cid in ("smuggle_ctx", "smuggle_injected"):
        assert "worker-token" not in replies[cid]
    for cid in valid:
        assert timeline[cid].status == "completed", (cid, timeline[cid])


async def test_lone_surrogates_do_not_wedge_the_run(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    """Lone surrogates (escaped in the JSON text, as a model may send them) end in a repair
    message, never in a stuck run: they cannot be carried in an activity's UTF-8 input."""
    executed: list[tuple[str, Any, Any]] = []
    corpus = [
        ("sur_high", "echo", '{"text": "\\ud800"}'),
        ("sur_low", "echo", '{"text": "a\\udfffb"}'),
        ("sur_key", "echo", '{"text": "a", "\\ud83d": 1}'),
    ]
    model = write_script(
        tmp_path,
        [
            {"tool_calls": [{"id": c, "name": n, "arguments": a} for c, n, a in corpus]},
            answer("survived"),
        ],
    )
    async with running_worker(
        client, make_registry(executed), task_queue, secrets={"token": "worker-token"}
    ):
        run = await DurableTools(client, task_queue).start("surrogates", model=model)
        try:
            result = await asyncio.wait_for(run.result(), 8)
        except TimeoutError:
            history = (await run.handle.fetch_history()).to_json()
            await run.handle.terminate("wedged by a lone surrogate")
            wedged = "surrogates not allowed" in history
            raise AssertionError(f"the run is stuck (workflow task failing: {wedged})") from None
        conversation = await run.conversation()
    assert result.status == RunStatus.COMPLETED, result
    replies = {m.tool_call_id: m.content or "" for m in conversation if m.role == "tool"}
    assert set(replies) == {c for c, _, _ in corpus}
    assert executed == []
    for cid, _, _ in corpus:
        assert cid in replies[cid] and "surrogate" in replies[cid], replies[cid]


async def test_deeply_nested_arguments_get_a_repair_message_not_a_wedged_run(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    """260 levels parse and pass a schema that takes any object, but pydantic-core refuses
    to serialise more than ~255 into the activity input: without a depth limit the
    workflow task fails on every attempt. With it, the model hears the limit and goes on."""
    executed: list[tuple[str, Any, Any]] = []
    deep = '{"data": ' + '{"a":' * 260 + "1" + "}" * 261
    model = write_script(
        tmp_path,
        [
            calls(("deep", "store", deep)),
            calls(("flat", "store", '{"data": {"a": 1}}')),
            answer("survived"),
        ],
    )
    async with running_worker(
        client, make_registry(executed), task_queue, secrets={"token": "worker-token"}
    ):
        run = await DurableTools(client, task_queue).start("nest deeply", model=model)
        try:
            result = await asyncio.wait_for(run.result(), 30)
        except TimeoutError:
            await run.handle.terminate("stuck on deeply nested arguments")
            raise
        finally:
            await assert_not_wedged(run.handle)  # names the failing workflow task if wedged
        conversation = await run.conversation()
    assert result.status == RunStatus.COMPLETED and result.final_answer == "survived", result
    replies = {m.tool_call_id: m.content or "" for m in conversation if m.role == "tool"}
    assert f"limit of {MAX_DEPTH} levels" in replies["deep"], replies["deep"]
    assert "deep" in replies["deep"] and len(replies["deep"]) < 1_000
    assert executed == [("flat", {"a": 1}, None)]  # the deep call never ran; the run went on


# ----------------------------------------------------------- property-based


def _spec() -> Any:
    return make_registry([]).get("echo").spec


SPEC = _spec()
VALIDATOR = Draft202012Validator(SPEC.input_schema)

# Text that may hold lone surrogates: json.dumps escapes them, as a model's JSON may.
texts = st.text() | st.lists(
    st.integers(0xD800, 0xDFFF).map(chr) | st.characters(), max_size=6
).map("".join)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | texts,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(["text", "count", "ctx", "token", "extra", ""]) | texts, children
        )
    ),
    max_leaves=20,
)
near_valid = st.fixed_dictionaries(
    {"text": texts | st.integers() | st.none()},
    optional={
        "count": st.integers() | st.floats() | st.booleans() | st.text(),
        "ctx": json_values,
        "token": st.text(),
    },
)


# Number literals as a model may write them: integral floats (2.0, 1E+2), which JSON Schema
# counts as integers, and literals that overflow a float (1e400), which json.loads makes inf.
number_literals = (
    st.integers().map(str)
    | st.floats(allow_nan=False, allow_infinity=False).map(repr)
    | st.integers(-(10**6), 10**6).map(lambda n: f"{n}.0")
    | st.sampled_from(["1E+2", "-0.0", "1e400", "-1e999", "2e308", "1e-400"])
)
counted = st.builds(
    lambda text, number: f'{{"text": {json.dumps(text)}, "count": {number}}}',
    st.text(max_size=5),
    number_literals,
)


def _texts() -> st.SearchStrategy[str]:
    dumped = (json_values | near_valid).map(lambda v: json.dumps(v, allow_nan=True))
    spliced = st.tuples(dumped, st.integers(0, 50), st.text(max_size=5)).map(
        lambda t: t[0][: t[1]] + t[2] + t[0][t[1] :]
    )
    return st.text() | dumped | counted | spliced | st.binary().map(lambda b: b.decode("latin-1"))


def _check(raw: Any) -> None:
    try:
        parsed = parse_arguments(raw)
        accepted = validate_arguments(SPEC, parsed)
    except InvalidArguments as error:
        assert error.message and error.errors
        return
    # Anything accepted is an object the schema admits, with no hidden parameter.
    assert isinstance(accepted, dict)
    assert VALIDATOR.is_valid(accepted)
    assert set(accepted) <= {"text", "count"}
    assert isinstance(accepted["text"], str)
    # An integral float (0.0) is an integer to JSON Schema; it comes back as an int.
    count = accepted.get("count", 1)
    assert isinstance(count, int) and not isinstance(count, bool)
    # ... and it can be carried in an activity input: UTF-8 JSON, finite numbers only
    # (allow_nan=False also refuses inf), within the depth limit.
    json.dumps(accepted, ensure_ascii=False, allow_nan=False).encode("utf-8")
    assert _depth(accepted) <= MAX_DEPTH


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    return 0


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_texts())
def test_parse_and_validate_only_raise_invalid_arguments(raw: str) -> None:
    _check(raw)
    _check(raw.encode("utf-8", errors="surrogatepass"))


@settings(max_examples=200, deadline=None)
@given(st.binary())
def test_arbitrary_bytes(raw: bytes) -> None:
    _check(raw)
