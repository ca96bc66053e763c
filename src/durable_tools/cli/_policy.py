"""Commands for approval policies and standing grants: `policy show|set`, `grants list|revoke`."""

from __future__ import annotations

import argparse
from typing import Any

from temporalio.client import WorkflowUpdateFailedError

from durable_tools._activities import GrantStore
from durable_tools.policy._grants import describe_constraints
from durable_tools.workflows import StandingGrant

from ._commands import tools_for
from ._decide import _who
from ._errors import CliError, translate_rpc_errors
from ._flags import add_connection_flags, add_json_flag
from ._output import dump_json, echo
from ._policy_flags import load_policy_file

__all__ = ["add_policy_commands"]


def add_policy_commands(sub: Any) -> None:
    """Register `policy show|set` and `grants list|revoke`."""
    p = sub.add_parser("policy", help="show or change a run's live approval policy")
    verbs = p.add_subparsers(title="actions", metavar="ACTION", required=True)
    q = verbs.add_parser("show", help="print a run's live approval policy")
    q.add_argument("run_id", metavar="RUN_ID", help="the run (workflow) id")
    add_connection_flags(q)
    q.set_defaults(handler=cmd_policy_show)
    q = verbs.add_parser("set", help="replace a run's live approval policy (audited)")
    q.add_argument("run_id", metavar="RUN_ID", help="the run (workflow) id")
    q.add_argument("file", metavar="FILE", help="the new policy (JSON or TOML)")
    q.add_argument("--as", dest="who", metavar="WHO", help="who changes it (default $USER)")
    q.add_argument("--reason", help="why (kept in the run's audit events)")
    add_connection_flags(q)
    q.set_defaults(handler=cmd_policy_set)

    p = sub.add_parser("grants", help="list or revoke standing approval grants")
    verbs = p.add_subparsers(title="actions", metavar="ACTION", required=True)
    q = verbs.add_parser("list", help="identity grants in the store, or a run's grants")
    q.add_argument("--run", dest="run_id", metavar="RUN_ID", help="a run's run-scoped grants")
    q.add_argument("--store", metavar="FILE", help="grant store (default under DURABLE_TOOLS_HOME)")
    add_json_flag(q)
    add_connection_flags(q)
    q.set_defaults(handler=cmd_grants_list)
    q = verbs.add_parser("revoke", help="revoke a grant")
    q.add_argument("grant_id", metavar="GRANT_ID", help="the grant, as `grants list` prints it")
    q.add_argument("--run", dest="run_id", metavar="RUN_ID", help="a run-scoped grant of RUN")
    q.add_argument("--store", metavar="FILE", help="grant store (default under DURABLE_TOOLS_HOME)")
    q.add_argument("--as", dest="who", metavar="WHO", help="who revokes it (default $USER)")
    add_connection_flags(q)
    q.set_defaults(handler=cmd_grants_revoke)


async def cmd_policy_show(args: argparse.Namespace) -> int:
    """Print a run's live policy as JSON."""
    run = (await tools_for(args)).run(args.run_id)
    async with translate_rpc_errors(run.run_id):
        policy = await run.policy()
    dump_json(policy.model_dump(mode="json") if policy else None)
    return 0


async def cmd_policy_set(args: argparse.Namespace) -> int:
    """Replace a run's live policy; a refusal by the run exits with 2."""
    policy = load_policy_file(args.file)
    run = (await tools_for(args)).run(args.run_id)
    try:
        async with translate_rpc_errors(run.run_id):
            await run.set_policy(policy, changed_by=args.who or _who(), reason=args.reason)
    except WorkflowUpdateFailedError as error:
        echo(f"refused: {error.cause}", err=True)
        return 2
    echo(f"policy of run {run.run_id} changed")
    return 0


def _line(grant: StandingGrant) -> str:
    state = "revoked" if grant.revoked_at else "live"
    until = grant.expires_at.isoformat() if grant.expires_at else "end of scope"
    who = f" {grant.identity}" if grant.identity else ""
    return (
        f"{grant.grant_id}  {state}  {grant.tool}  {grant.scope}{who}  by {grant.granted_by}  "
        f"until {until}  when {describe_constraints(grant.constraints)}"
    )


async def cmd_grants_list(args: argparse.Namespace) -> int:
    """List grants: the identity store's, or one run's."""
    if args.run_id:
        run = (await tools_for(args)).run(args.run_id)
        async with translate_rpc_errors(run.run_id):
            grants = await run.grants()
    else:
        grants = await GrantStore(args.store).all()
    if args.json:
        dump_json([g.model_dump(mode="json") for g in grants])
    else:
        for grant in grants:
            echo(_line(grant))
        if not grants:
            echo("no grants")
    return 0


async def cmd_grants_revoke(args: argparse.Namespace) -> int:
    """Revoke a grant in the identity store, or a run-scoped one of `--run`."""
    who = args.who or _who()
    if args.run_id:
        run = (await tools_for(args)).run(args.run_id)
        try:
            async with translate_rpc_errors(run.run_id):
                await run.revoke_grant(args.grant_id, revoked_by=who)
        except WorkflowUpdateFailedError as error:
            echo(f"refused: {error.cause}", err=True)
            return 2
    else:
        try:
            await GrantStore(args.store).revoke(args.grant_id, who)
        except KeyError:
            raise CliError(f"no grant {args.grant_id!r} in the store") from None
    echo(f"revoked {args.grant_id}")
    return 0
