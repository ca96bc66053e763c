"""A Temporal runtime whose metrics (the SDK's and durable-tools') are served to Prometheus."""

from __future__ import annotations

from temporalio.runtime import PrometheusConfig, Runtime, TelemetryConfig

__all__ = ["prometheus_runtime"]


def prometheus_runtime(port: int, host: str = "127.0.0.1") -> Runtime:
    """A runtime serving `http://HOST:PORT/metrics` in the Prometheus text format.

    A runtime belongs to the clients connected with it (`Client.connect(runtime=...)`) and to
    the workers built from them: the SDK's worker metrics, and everything recorded through
    `activity.metric_meter()` / `workflow.metric_meter()`, leave through this endpoint.
    Histograms are in milliseconds (`durations_as_seconds=False`).
    """
    return Runtime(
        telemetry=TelemetryConfig(
            metrics=PrometheusConfig(bind_address=f"{host}:{port}", durations_as_seconds=False)
        )
    )
