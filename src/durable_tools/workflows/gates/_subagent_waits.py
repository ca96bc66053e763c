"""The parent's side of a sub-agent's waits: which sub-agents run, and the notices they
send of the approvals they wait for (`observe/_visibility` is the sending side and what
the run shows of them).

The notice arrives as a signal (`SUBAGENT_WAITS_SIGNAL`): anyone who may signal the run
can send one, so every notice is checked before it changes anything, and a refused one is
said in the events and changes nothing:

- its shape and bounds (`SubagentNotice`: ids, sizes, at most `MAX_SUBAGENT_WAITS` waits,
  a full arguments hash each);
- its sender: a sub-agent call of this run that is running now (a notice from a run this
  run did not start, or whose call ended, is not shown), and the waits it lists are that
  sub-agent's or its own sub-agents' (their ids extend its id);
- its time: not ahead of the run's clock by more than `MAX_NOTICE_SKEW`;
- its token: the secret this run gave that sub-agent call in its input
  (`AgentInput.report_token`, compared in constant time), so a notice signalled by anyone
  else is refused whatever it names;
- its order: a notice whose `seq` (the child's own count) is not above the one kept for
  that sub-agent (a repeat, or one overtaken by a later one) is dropped without a word.
  Calls started before `SUBAGENT_TOKEN_PATCH` gave no token: their notices are taken and
  ordered as they were then (by `sent_at`, then `seq`), so those runs replay.

What is shown stays bounded: one notice per running sub-agent call, each of bounded size.
Nothing here raises for any input, so no notice can fail the run's workflow task.
"""

from __future__ import annotations

import hmac
from datetime import timedelta

from pydantic import ValidationError
from temporalio import workflow

from durable_tools.protocol._limits import clip
from durable_tools.protocol._wait_types import SubagentNotice
from durable_tools.workflows.observe._visibility import publish
from durable_tools.workflows.run._state import RunState

__all__ = [
    "MAX_NOTICE_SKEW",
    "SUBAGENT_TOKEN_PATCH",
    "SUBAGENT_WAITS_PATCH",
    "accept_subagent_notice",
    "end_subagent",
    "start_subagent",
]

SUBAGENT_WAITS_PATCH = "subagent-waits-reported"
"""Marks runs whose sub-agents tell them what they wait for (`AgentInput.report_to`):
their notices are signals, commands a run recorded before would not replay. Asked when a
sub-agent call starts."""
SUBAGENT_TOKEN_PATCH = "subagent-notice-token"
"""Marks runs that give each sub-agent call a secret token (`AgentInput.report_token`)
and take only notices carrying it: drawing the token moves the run's random sequence,
which runs recorded before would not replay."""
MAX_NOTICE_SKEW = timedelta(minutes=5)
"""How far ahead of the run's clock a notice's time may be (a notice is sent before it
arrives, so a later time is a forged or broken one)."""
_DETAIL_CHARS = 300


def start_subagent(state: RunState, child_id: str, token: str | None) -> None:
    """A sub-agent call starts its child `child_id`, telling it `token` (None: a call
    started before `SUBAGENT_TOKEN_PATCH`): its notices are heard from now."""
    state.gates.subagents.setdefault(child_id, None)
    if token is not None:
        state.gates.subagent_tokens[child_id] = token


def end_subagent(state: RunState, child_id: str) -> None:
    """The sub-agent call of `child_id` ended: forget what it waited for (and show it)."""
    state.gates.subagent_tokens.pop(child_id, None)
    notice = state.gates.subagents.pop(child_id, None)
    if notice is not None and (notice.waits or notice.more):
        publish(state)


def _refuse(state: RunState, why: str) -> None:
    state.event("subagent.notice_refused", detail=clip(why, _DETAIL_CHARS))


def accept_subagent_notice(state: RunState, raw: object) -> None:
    """Take a sub-agent's notice of what it waits for, when it passes every check."""
    try:
        notice = SubagentNotice.model_validate(raw)
    except ValidationError as error:
        problem = error.errors(include_url=False, include_input=False)[0]
        where = ".".join(str(part) for part in problem["loc"])
        _refuse(state, f"malformed notice ({where}: {problem['msg']})")
        return
    child = notice.child_id
    gates = state.gates
    if child not in gates.subagents:
        if notice.waits or notice.more:  # an empty one is a sub-agent's last word, late
            _refuse(state, f"no sub-agent call of this run runs {child!r}")
        return
    if notice.sent_at.tzinfo is None or notice.sent_at - workflow.now() > MAX_NOTICE_SKEW:
        _refuse(state, f"notice of {child!r} dated {notice.sent_at.isoformat()}: not yet sent")
        return
    own = (child, child + ".")  # the child's id, or the start of its sub-agents' ids
    stranger = next(
        (w.run_id for w in notice.waits if w.run_id != own[0] and not w.run_id.startswith(own[1])),
        None,
    )
    if stranger is not None:
        _refuse(state, f"notice of {child!r} names run {stranger!r}, not one of its own")
        return
    kept = gates.subagents[child]
    token = gates.subagent_tokens.get(child)
    if token is None:  # a call started before SUBAGENT_TOKEN_PATCH: as it was then
        if kept is not None and (notice.sent_at, notice.seq) <= (kept.sent_at, kept.seq):
            return  # a repeat, or overtaken by a newer notice
    else:
        given = (notice.token or "").encode()
        if not hmac.compare_digest(given, token.encode()):
            _refuse(state, f"notice of {child!r} without the token its call gave it")
            return
        if kept is not None and notice.seq <= kept.seq:
            return  # a repeat, or overtaken by a newer notice
        notice = notice.model_copy(update={"token": None})  # kept, shown: never the secret
    gates.subagents[child] = notice
    told = ", ".join(f"{w.tool} (call {w.call_id})" for w in notice.waits)
    more = f" and {notice.more} more" if notice.more else ""
    state.event(
        "subagent.waiting",
        detail=clip(f"sub-agent run {child} waits for: {told or 'nothing'}{more}", _DETAIL_CHARS),
    )
    publish(state)
