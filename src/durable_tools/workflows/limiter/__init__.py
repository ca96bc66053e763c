"""The model limiter: one long-lived workflow per rate-limited model spec and task queue,
booking start times for model calls so that every worker of the deployment keeps the
model's `ModelLimits` (docs/models.md, "Rate limits").

Internal: its modules are private and their public names are exported elsewhere.
"""

__all__: list[str] = []
