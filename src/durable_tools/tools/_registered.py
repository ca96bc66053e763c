"""A tool as the worker knows it: its spec, and the parts that never leave the worker.

The function, an approval predicate and a visibility rule are callables: they stay on
the worker, while the `ToolSpec` (plain data) is what a workflow sees.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError as PydanticValidationError

from ._approval_summary import SummaryFunction
from ._context import Identity, MissingResource, ToolContext
from ._errors import InvalidArguments, ToolExecutionError
from ._schema import SignaturePlan
from ._schema_strict import drop_added_nulls
from ._spec import ToolSpec

__all__ = ["ApprovalPredicate", "RegisteredTool"]

ApprovalPredicate = Callable[[dict[str, Any]], bool]
"""Decides per call, from the validated arguments, whether a person must approve."""


@dataclass(frozen=True)
class RegisteredTool:
    """A tool as the worker knows it: the spec plus everything that must not leave the worker."""

    spec: ToolSpec
    fn: Callable[..., Any]
    plan: SignaturePlan
    approval_predicate: ApprovalPredicate | None = None
    """Set when `spec.approval == "conditional"`."""
    visible_to: Callable[[Identity], bool] | None = None
    """Hides the tool from runs whose identity it rejects."""
    approval_summary: SummaryFunction | None = None
    """Writes a call's summary for its approver (`spec.approval_summary_on_worker`)."""

    @property
    def name(self) -> str:
        """The tool's name."""
        return self.spec.name

    @property
    def is_async(self) -> bool:
        """Whether the function is a coroutine function (else it runs in a thread)."""
        return inspect.iscoroutinefunction(self.fn)

    def requires_approval(self, args: Mapping[str, Any]) -> bool:
        """Whether this call needs a person's approval. A predicate that raises fails closed."""
        if self.spec.approval == "always":
            return True
        if self.spec.approval == "never" or self.approval_predicate is None:
            return self.spec.approval != "never"
        try:
            return bool(self.approval_predicate(dict(args)))
        except Exception:
            return True

    def is_visible_to(self, identity: Identity | None) -> bool:
        """Whether a run acting for `identity` may see the tool. A rule that raises hides it."""
        if self.visible_to is None:
            return True
        try:
            return bool(self.visible_to(identity or Identity()))
        except Exception:
            return False

    def to_python(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """Validated JSON arguments as the Python values the function takes.

        Raises:
            InvalidArguments: pydantic refused a value the JSON Schema allowed (a custom
                validator, say).
        """
        data = (
            drop_added_nulls(dict(args), self.plan.lax_schema) if self.spec.strict else dict(args)
        )
        try:
            instance = self.plan.input_model.model_validate(data)
        except PydanticValidationError as exc:
            lines = [
                f"$.{'.'.join(str(p) for p in err['loc'])}: {err['msg']}".replace("$.:", "$:")
                for err in exc.errors()
            ]
            raise InvalidArguments(
                f"arguments for {self.spec.name!r} are invalid: {lines[0]}", errors=lines
            ) from None
        if self.plan.single_model is not None:
            return {self.plan.single_model: instance}
        return {
            p.name: getattr(instance, p.field)
            for p in self.plan.params
            if p.source == "model" and p.field is not None
        }

    def inject(self, values: dict[str, Any], context: ToolContext) -> dict[str, Any]:
        """Add the worker-side values (context, resources, secrets) to the call's kwargs.

        Raises:
            ToolExecutionError: not retryable; the worker lacks a resource or secret the
                tool needs and the parameter has no default.
        """
        kwargs = dict(values)
        for param in self.plan.params:
            if param.source == "context":
                kwargs[param.name] = context
            elif param.source == "injected":
                marker = param.injected
                key = (marker.name if marker and marker.name else None) or param.name
                secret = bool(marker and marker.secret)
                try:
                    kwargs[param.name] = context.secret(key) if secret else context.resource(key)
                except MissingResource:
                    if param.default is not inspect.Parameter.empty:
                        kwargs[param.name] = param.default
                        continue
                    what = "secret" if secret else "resource"
                    raise ToolExecutionError(
                        f"the worker has no {what} named {key!r}, needed by parameter "
                        f"{param.name!r} of tool {self.spec.name!r}",
                        retryable=False,
                        details={"missing": key, "kind": what},
                    ) from None
        return kwargs

    async def call(self, kwargs: dict[str, Any]) -> Any:
        """Run the function: coroutines on the loop, sync functions in a worker thread."""
        if self.is_async:
            return await self.fn(**kwargs)
        result = await _in_thread(functools.partial(self.fn, **kwargs))
        if inspect.isawaitable(result):  # a sync wrapper around an async function
            return await result
        return result


async def _in_thread(fn: Callable[[], Any]) -> Any:
    """Run `fn` in a worker thread and wait for it to end, even when cancelled.

    Python cannot interrupt a thread, so `asyncio.to_thread` would return at once on
    cancellation while the function ran on unseen, possibly still causing effects after its
    call was reported cancelled. Here cancellation waits for the function instead: it sees
    `ToolContext.cancelled`, stops and returns or raises, and that is the call's outcome.
    """
    loop = asyncio.get_running_loop()
    future = loop.run_in_executor(None, contextvars.copy_context().run, fn)
    while True:
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            if future.done():
                return future.result()
            # Keep waiting; the caller has set the cancellation flag the function polls.
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
