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
    """What the run's tokens cost, when the config prices each model that answered.

    Turns answered by a fallback model are priced at that model's price; the rest (the
    first model's turns and the summariser's) at the first model's.
    """
    prices = state.config.prices
    price = prices.get(state.config.model)
    if price is None or any(spec not in prices for spec in state.model.fallback_usage):
        return None
    own = state.model.usage
    cost = 0.0
    for spec, usage in state.model.fallback_usage.items():
        cost += prices[spec].cost(usage)
        own = Usage(
            input_tokens=own.input_tokens - usage.input_tokens,
            output_tokens=own.output_tokens - usage.output_tokens,
            cache_read_tokens=own.cache_read_tokens - usage.cache_read_tokens,
        )
    return cost + price.cost(own)


def spend_tokens(state: RunState, response: ModelResponse) -> None:
    """Add a model turn's usage to the run's and end the run if a budget is exceeded.

    Raises:
        EndRun: `limit_reached`, naming the budget and the figure reached.
    """
    usage = response.usage
    model = state.model.answered_by or state.config.model
    fallback = model != state.config.model
    if usage.total_tokens or usage.reasoning_tokens:
        state.model.usage = state.model.usage + usage
        if fallback:
            state.model.fallback_usage[model] = (
                state.model.fallback_usage.get(model, Usage()) + usage
            )
        by = f" by {model}" if fallback else ""
        state.event(
            "model.usage",
            detail=f"turn {state.turn}{by}: {describe_usage(usage)}",
            details={**usage.model_dump(), "model": model},
        )
    if all(call.name == FINAL_ANSWER_TOOL for call in response.message.tool_calls):
        # No calls, or only the final answer (structured output in tool mode): the run
        # ends with this answer, as with a text answer; a budget stops further turns only.
        return
    limits = state.config.limits
    used = state.model.usage.total_tokens
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
