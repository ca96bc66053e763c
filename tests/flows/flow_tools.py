"""Tools and flows shared by the flow tests."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from pydantic import BaseModel

from durable_tools import ToolRegistry
from durable_tools.flows import FlowNode


class Place(BaseModel):
    name: str
    lat: float
    lon: float


@dataclass
class Calls:
    """What the tools saw: call counts and the keys and arguments they ran with."""

    counts: dict[str, int] = field(default_factory=dict)
    keys: dict[str, str] = field(default_factory=dict)
    started: dict[str, asyncio.Event] = field(default_factory=dict)

    def ran(self, name: str) -> None:
        self.counts[name] = self.counts.get(name, 0) + 1

    def event(self, name: str) -> asyncio.Event:
        return self.started.setdefault(name, asyncio.Event())


def diamond_registry(seen: Calls) -> ToolRegistry:
    """geo -> (sky, zone) -> brief: the middle nodes each wait until the other started."""
    registry = ToolRegistry()

    @registry.tool(read_only=True)
    async def geocode(city: str) -> Place:
        """Find a city."""
        seen.ran("geocode")
        return Place(name=city, lat=48.85, lon=2.35)

    async def meet(me: str, other: str) -> None:
        # Each middle node waits for the other to have started: run one after the
        # other, the first would wait for ever (and fail at its wait's bound).
        seen.event(me).set()
        await asyncio.wait_for(seen.event(other).wait(), timeout=20)

    @registry.tool(read_only=True)
    async def weather(lat: float, lon: float) -> str:
        """Weather at a place."""
        seen.ran("weather")
        await meet("weather", "timezone")
        return f"sunny at {lat:.2f},{lon:.2f}"

    @registry.tool(read_only=True)
    async def timezone(lat: float, lon: float) -> str:
        """Time zone of a place."""
        seen.ran("timezone")
        await meet("timezone", "weather")
        return "Europe/Paris"

    @registry.tool(read_only=True)
    def summarize(city: str, weather: str, zone: str) -> str:
        """Write a short brief."""
        seen.ran("summarize")
        return f"{city}: {weather}, time zone {zone}"

    registry.flow(
        "trip_brief",
        "Weather and time zone of a city, in one sentence.",
        nodes={
            "geo": FlowNode(tool="geocode", arguments={"city": "$args.city"}),
            "sky": FlowNode(
                tool="weather",
                arguments={"lat": "$nodes.geo.output.lat", "lon": "$nodes.geo.output.lon"},
            ),
            "zone": {
                "tool": "timezone",
                "arguments": {"lat": "$nodes.geo.output.lat", "lon": "$nodes.geo.output.lon"},
            },
            "brief": FlowNode(
                tool="summarize",
                arguments={
                    "city": "$args.city",
                    "weather": "$nodes.sky.output",
                    "zone": "$nodes.zone.output",
                },
            ),
        },
    )
    return registry
