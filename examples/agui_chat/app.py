"""A small web chat on durable-tools sessions: the page (index.html and its bundle, built
with `npm ci && npm run build`) and the AG-UI endpoint at /agui, in one Starlette app.

Run it next to the quick start's server and worker (`durable-tools server`, `durable-tools
worker --tools myapp.tools`), with a user of the inbox's tokens file:

    durable-tools inbox token add alice
    python examples/agui_chat/app.py --model scripted:myapp/session.json

then open http://127.0.0.1:8780/, paste alice's token and chat.
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from starlette.applications import Starlette
from starlette.responses import FileResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from durable_tools import AgentConfig, ApprovalPolicy, DurableTools
from durable_tools.agui import AguiConfig, create_agui_app
from durable_tools.inbox import AuthConfig, InboxServer, TokenStore, default_tokens_file

HERE = Path(__file__).resolve().parent


def create_chat_app(tools: DurableTools, config: AguiConfig) -> Starlette:
    """The chat page at `/`, its bundle at `/dist/`, the AG-UI endpoint at `/agui/`."""
    bundle = HERE / "dist"
    if not (bundle / "chat.js").exists():
        raise SystemExit(f"build the page first: cd {HERE} && npm ci && npm run build")

    async def page(request: object) -> FileResponse:
        return FileResponse(HERE / "index.html")

    return Starlette(
        routes=[
            Route("/", page),
            Mount("/dist", StaticFiles(directory=bundle)),
            Mount("/agui", create_agui_app(tools, config)),
        ]
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description="a web chat on durable-tools sessions")
    parser.add_argument("--model", default="scripted:myapp/session.json")
    parser.add_argument("--port", type=int, default=8780)
    args = parser.parse_args()
    tools = await DurableTools.connect()
    config = AguiConfig(
        agent=AgentConfig(model=args.model, approval=ApprovalPolicy()),
        auth=AuthConfig(TokenStore(default_tokens_file())),
    )
    server = InboxServer(create_chat_app(tools, config), port=args.port)
    await server.start()
    print(f"chat at {server.url}/", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main())
