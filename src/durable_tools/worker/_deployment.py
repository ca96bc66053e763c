"""Worker Deployment Versioning: the deployment config of a versioned durable-tools worker.

The agent workflow declares no versioning behaviour of its own: on server 1.32 a workflow
type that declares one cannot complete a task on an unversioned worker ("versioning
behavior cannot be specified without deployment options being set with versioned mode"),
and most workers are unversioned. A versioned worker gives its workflows the default
`PINNED` instead, so a run waiting on a person finishes on the build it started on; a run
that should move is started with an auto-upgrade override or continues as new onto the
current build (`AgentConfig.versioning`, docs/operations.md).
"""

from __future__ import annotations

from temporalio.common import VersioningBehavior, WorkerDeploymentVersion
from temporalio.worker import WorkerDeploymentConfig

__all__ = ["deployment_version", "versioned"]

_MAX_CHARS = 255  # the server's limit on a deployment name and on a build id


def deployment_version(deployment: str, build_id: str) -> WorkerDeploymentVersion:
    """The version `deployment`/`build_id` name, checked before any worker polls with it.

    Raises:
        ValueError: either part is empty, longer than 255 characters or holds a space or
            control character, or the deployment name holds a `.` (the separator of the
            canonical `name.build` form, so `temporal worker deployment` could not name it).
    """
    for label, value in (("deployment name", deployment), ("build id", build_id)):
        if not 0 < len(value) <= _MAX_CHARS or not value.isprintable() or " " in value:
            raise ValueError(
                f"invalid {label} {value!r}: 1-{_MAX_CHARS} printable characters, no spaces"
            )
    if "." in deployment:
        raise ValueError(f"invalid deployment name {deployment!r}: it may not contain '.'")
    return WorkerDeploymentVersion(deployment_name=deployment, build_id=build_id)


def versioned(version: WorkerDeploymentVersion) -> WorkerDeploymentConfig:
    """A worker of `version` whose workflows are pinned unless a run says otherwise."""
    return WorkerDeploymentConfig(
        version=version,
        use_worker_versioning=True,
        default_versioning_behavior=VersioningBehavior.PINNED,
    )
