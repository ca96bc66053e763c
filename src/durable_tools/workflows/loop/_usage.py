"""Token usage of a run: summed after each model turn, priced, and held to the budgets.

Usage is workflow state (carried over continue-as-new), read by the `status` query; the
figures come from the model activity's recorded result, so replay sums them the same
way. The budgets (`Limits.max_tokens`, `Limits.max_cost`) are checked after a turn that
asks for tools: the turn's tokens are spent already, and the budget stops the work that
would follow. A turn that answers ends the run with its answer, budget or not.
"""

from __future__ import annotations

from durable_tools.messages import ModelResponse, Usage
from durable_tools.protocol._types import RunStatus
from durable_tools.workflows.loop._final_output import FINAL_ANSWER_TOOL
from durable_tools.workflows.run._state import EndRun, RunState

__all__ = ["describe_usage", "run_cost", "spend_tokens"]


def describe_usage(usage: Usage) -> str:
    """A short text of a usage, for events and `show`."""
    text = f"{usage.input_tokens:,} in"
    if usage.cache_read_tokens:
        text += f" ({usage.cache_read_tokens:,} cached)"
    text += f", {usage.output_tokens:,} out"
    if usage.reasoning_tokens:
        text += f" ({usage.reasoning_tokens:,} reasoning)"
    return text


def run_cost(state: RunState) -> float | None:
    """What the run's tokens cost, when the config prices its model."""
    price = state.config.prices.get(state.config.model)
    return None if price is None else price.cost(state.usage)


def spend_tokens(state: RunState, response: ModelResponse) -> None:
    """Add a model turn's usage to the run's and end the run if a budget is exceeded.

    Raises:
        EndRun: `limit_reached`, naming the budget and the figure reached.
    """
    usage = response.usage
    if usage.total_tokens or usage.reasoning_tokens:
        state.usage = state.usage + usage
        state.event(
            "model.usage",
            detail=f"turn {state.turn}: {describe_usage(usage)}",
            details=usage.model_dump(),
        )
    if all(call.name == FINAL_ANSWER_TOOL for call in response.message.tool_calls):
        # No calls, or only the final answer (structured output in tool mode): the run
        # ends with this answer, as with a text answer; a budget stops further turns only.
        return
    limits = state.config.limits
    used = state.usage.total_tokens
    if limits.max_tokens is not None and used >= limits.max_tokens:
        raise EndRun(
            RunStatus.LIMIT_REACHED,
            f"max_tokens ({limits.max_tokens:,}) reached: used {used:,}",
        )
    cost = run_cost(state)
    if limits.max_cost is not None and cost is not None and cost >= limits.max_cost:
        raise EndRun(
            RunStatus.LIMIT_REACHED,
            f"max_cost ({limits.max_cost:g}) reached: spent {cost:.6g}",
        )
