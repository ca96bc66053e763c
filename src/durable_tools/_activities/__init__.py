"""Activities: one per tool, plus the catalog, model, preflight, evaluator and grant ones.

Internal: workers register them (`durable_tools.worker`, `durable_tools.plugin`). The
types a worker's builder takes (`AuthorizationBroker`, `Evaluator`, `GrantStore`) are
public from `durable_tools.worker`.
"""

from ._core import core_activities
from ._evaluate import Evaluator, evaluate_activity
from ._grants import GrantStore, grant_activities
from ._notify import NOTIFY_ACTIVITY, Notification, NotificationRequest, notify_activity, sign
from ._runtime import AuthorizationBroker, ToolRuntime
from ._tools import make_tool_activity, to_application_error
from ._types import (
    CATALOG_ACTIVITY,
    MODEL_ACTIVITY,
    PREFLIGHT_ACTIVITY,
    CatalogRequest,
    ModelCall,
    PreflightRequest,
    PreflightResult,
    ToolInvocation,
)

__all__ = [
    "CATALOG_ACTIVITY",
    "MODEL_ACTIVITY",
    "NOTIFY_ACTIVITY",
    "PREFLIGHT_ACTIVITY",
    "AuthorizationBroker",
    "CatalogRequest",
    "Evaluator",
    "GrantStore",
    "ModelCall",
    "Notification",
    "NotificationRequest",
    "PreflightRequest",
    "PreflightResult",
    "ToolInvocation",
    "ToolRuntime",
    "core_activities",
    "evaluate_activity",
    "grant_activities",
    "make_tool_activity",
    "notify_activity",
    "sign",
    "to_application_error",
]
