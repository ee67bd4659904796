"""``keel users add|list|revoke``: the people who may call ``keel serve``, and their API keys.

A key is printed once, when the user is added; only its hash is stored (in the configured
MongoDB, so every replica of the server knows it). Revoking stops the key within
``auth_cache_ttl_s`` seconds on running servers.
"""

from __future__ import annotations

import argparse
import json

from keel.core.configuration import Configuration


def add_users_parser(commands) -> None:
    """`keel users`: the API users of `keel serve`, added, listed and revoked."""
    users = commands.add_parser("users", help="API users of `keel serve`: add, list, revoke")
    actions = users.add_subparsers(dest="action", required=True)
    add = actions.add_parser("add", help="add a user and print their API key (shown once)")
    add.add_argument("name", help="the user id their documents and conversations are filed under")
    add.add_argument("--role", choices=["user", "reviewer", "admin"], default="user",
                     help="recorded with the key (default: %(default)s); every role sees only its own data, "
                          "and reviewer and admin also the answers held for review (keel review, /review)")
    add.add_argument("--json", action="store_true", help="print one JSON object")
    listing = actions.add_parser("list", help="list users (never their keys)")
    listing.add_argument("--json", action="store_true", help="print one JSON object")
    revoke = actions.add_parser("revoke", help="revoke a user's key")
    revoke.add_argument("name")
    users.set_defaults(handler=run_users)


def run_users(args: argparse.Namespace) -> int:
    """Run one `keel users` action against the stored API keys."""
    from keel.server.auth import (
        ApiKeys,  # here: the other `keel` commands start without a store client
    )

    keys = ApiKeys.from_config(Configuration())
    if args.action == "add":
        key = keys.add(args.name, args.role)
        if args.json:
            print(json.dumps({"name": args.name, "role": args.role, "api_key": key}))
        else:
            print(f"added {args.name} ({args.role}). API key, shown only now:\n{key}")
        return 0
    if args.action == "list":
        users = keys.list()
        if args.json:
            print(json.dumps({"users": users}, default=str))
        else:
            for user in users:
                state = "revoked" if user["revoked"] else "active"
                print(f"{user['name']:24} {user['role']:9} {state:8} {user['created_at']:%Y-%m-%d %H:%M}")
            if not users:
                print("no users yet: keel users add NAME")
        return 0
    if keys.revoke(args.name):
        print(f"revoked {args.name}")
        return 0
    print(f"keel: no active user named {args.name!r}")
    return 1
