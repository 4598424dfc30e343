"""``course-room serve ROOM``: serve a workshop's room and print how to join it and watch it."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import resource
import signal
import socket
import sys
from collections.abc import Sequence
from pathlib import Path

import tornado.ioloop
import tornado.netutil

from ._app import (
    MAX_BODY_BYTES,
    PUSH_EVERY_MS,
    BoundedServer,
    Limits,
    OnceEvery,
    Room,
    is_loopback,
    log,
    make_app,
)
from ._state import GONE_AFTER_S, RUNNING_AFTER_S, RoomState, exercise_infos
from ._store import PrivateFileError, RoomStore, make_private, write_private

REQUEST_TIMEOUT_S = 20.0
"""How long a request may take to arrive whole, and an idle connection is kept."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="course-room",
        description="A live room for a workshop: learners' self-checks appear on your dashboard.",
    )
    verbs = parser.add_subparsers(dest="verb", required=True)
    serve = verbs.add_parser(
        "serve",
        help="serve a room (created on first use, reopened with every event after)",
        description="Serve a room. ROOM is its SQLite file, created when missing and reopened "
        "with its join code, token and every event when it exists.",
    )
    serve.add_argument("room", type=Path, help="the room's file, e.g. workshop.sqlite")
    serve.add_argument(
        "--host",
        default="127.0.0.1",
        help="the interface to listen on (default 127.0.0.1, this machine only; 0.0.0.0 for "
        "every interface, so that learners on the room's network can reach it)",
    )
    serve.add_argument("--port", type=int, default=8765, help="default 8765; 0 picks a free one")
    serve.add_argument(
        "--public-url",
        help="the address learners use, when it is not this machine's (behind a reverse proxy: "
        "https://HOST/PREFIX)",
    )
    serve.add_argument(
        "--base-path",
        default="",
        help="a path prefix for every route (behind a proxy that forwards /PREFIX/ unchanged)",
    )
    serve.add_argument(
        "--behind-proxy",
        action="store_true",
        help="trust X-Forwarded-For and X-Forwarded-Proto (only behind your own reverse proxy)",
    )
    serve.add_argument(
        "--idle-minutes",
        type=float,
        help="minutes without any check in the room after which it counts as paused (a lesson "
        "being taught): nobody is listed for silence then (default 5; the dashboard can change it)",
    )
    serve.add_argument(
        "--running-after",
        type=float,
        default=RUNNING_AFTER_S,
        help="seconds a check may run before Needs help shows it as running (default %(default)g)",
    )
    serve.add_argument(
        "--gone-after",
        type=float,
        default=GONE_AFTER_S,
        help="seconds without a word from a kernel that sends heartbeats before Needs help asks "
        "whether it is gone (default %(default)g: two heartbeats missed)",
    )
    serve.add_argument(
        "--rate",
        type=float,
        default=Limits.learner_rate,
        help=f"events per second one learner may send (default {Limits.learner_rate:g}, "
        f"bursts of {Limits.learner_burst:g})",
    )
    serve.add_argument(
        "--host-rate",
        type=float,
        default=Limits.host_rate,
        help="events per second one address may send, all its learners together (default "
        f"{Limits.host_rate:g}); raise it when a whole room comes through one address",
    )
    serve.add_argument(
        "--max-learners",
        type=int,
        default=Limits.max_learners,
        help=f"names the room takes (default {Limits.max_learners})",
    )
    serve.add_argument(
        "--connections-per-address",
        type=int,
        default=BoundedServer.per_address,
        help="open connections one address may hold (default %(default)s); it counts the "
        "socket's own address, so raise it when a whole room comes through one address: a "
        "shared NAT, or the proxy of --behind-proxy",
    )
    serve.add_argument(
        "--request-timeout",
        type=float,
        default=REQUEST_TIMEOUT_S,
        help="seconds a request may take to arrive whole, and an idle connection stays open "
        "(default %(default)g)",
    )
    serve.add_argument(
        "--info", type=Path, help="also write the addresses, code and token to this JSON file"
    )
    return parser


def _guess_address() -> str:
    """This machine's address on its network, when listening on every interface. A UDP socket's
    connect sends nothing; it only picks the interface a packet would leave by."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # TEST-NET-1: never routed anywhere
            return str(probe.getsockname()[0])
        except OSError:
            return socket.gethostname()


def _open_files_limit() -> int:
    """Raise this process's limit on open files to the most allowed; the limit then."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        wanted = 65536 if hard == resource.RLIM_INFINITY else hard
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
            soft = wanted
        except (ValueError, OSError):
            pass
    return int(soft)


def _quiet_repeats() -> None:
    """Say an error that repeats as fast as a loop runs once a minute, not thousands of times."""
    logging.basicConfig(format="course-room: %(message)s")
    logging.getLogger("tornado.access").setLevel(logging.ERROR)  # the room's file is its log
    once = OnceEvery(60.0)
    for name in ("asyncio", "tornado.access", "tornado.application", "tornado.general", log.name):
        logging.getLogger(name).addFilter(once)


def serve(args: argparse.Namespace) -> int:
    path = args.room if args.room.suffix else args.room.with_suffix(".sqlite")
    try:
        if args.info:
            make_private(args.info)
        store = RoomStore(path)
    except PrivateFileError as error:
        print(f"course-room: {error}", file=sys.stderr)
        return 2
    if args.idle_minutes is not None:
        store.set("idle_minutes", str(args.idle_minutes))
    from course_lib.checks import all_exercises

    state = RoomState(exercise_infos(all_exercises()), float(store.get("idle_minutes", "5")))
    state.running_after, state.gone_after = args.running_after, args.gone_after
    limits = Limits(
        learner_rate=args.rate,
        host_rate=args.host_rate,
        host_burst=2 * args.host_rate,
        new_names_rate=args.host_rate / 200,
        max_learners=args.max_learners,
    )
    room = Room(store, state, limits)
    room.public_url = (args.public_url or "").rstrip("/")
    app = make_app(room, args.base_path)
    try:
        sockets = tornado.netutil.bind_sockets(args.port, address=args.host)
    except OSError as error:
        print(f"course-room: cannot listen on {args.host}:{args.port}: {error}", file=sys.stderr)
        return 2
    port = sockets[0].getsockname()[1]
    host = _guess_address() if args.host in ("0.0.0.0", "::", "") else args.host
    reachable = not is_loopback(host)
    shown = f"[{host}]" if ":" in host else host
    base = "/" + args.base_path.strip("/") if args.base_path.strip("/") else ""
    url = (args.public_url or f"http://{shown}:{port}{base}").rstrip("/")
    room.addresses = [f"http://{shown}:{port}{base}"] if reachable else []
    dashboard_at = url if args.public_url else f"http://{shown}:{port}{base}"
    dashboard = f"{dashboard_at}/dashboard?token={store.token}"
    helpers = f"{dashboard_at}/dashboard?token={store.helper_token}"
    learners = len(state.learners)
    opened = "new room" if store.new else f"reopened, {learners} learners and their events kept"
    print(f"Room {store.path} ({opened}). Join code: {store.code}")
    if is_loopback(args.host):
        print(
            f"Listening on {args.host}:{port}, this machine only: learners elsewhere cannot reach "
            "it. Add --host 0.0.0.0 (or this machine's address) to open it to the room's network."
        )
    else:
        print(f"Listening on {args.host}:{port}.")
    print(f"Put this page on the projector (the join line, no secret of yours): {url}/")
    print(
        "Learners run, in a cell of any course notebook (their other notebooks join too, open ones"
    )
    print("included; help_me() raises a hand on your dashboard, done() lowers it):")
    print(
        f'    from course_lib.checks import join_room; join_room("{url}", '
        f'code="{store.code}", name="YOUR NAME")'
    )
    print("or start Jupyter with:")
    print(f'    COURSE_ROOM="{url}?code={store.code}&name=YOUR NAME" jupyter lab')
    print()
    print(
        "Your dashboard, for your own screen (it shows names; its projector view hides them): "
        f"{dashboard}"
    )
    print(
        "Your helpers' dashboard (they can mark learners helped; not export, rename or change "
        f"settings): {helpers}"
    )
    if args.info:
        info = {
            "url": url,
            "dashboard": dashboard,
            "helpers": helpers,
            "code": store.code,
            "token": store.token,
            "helper_token": store.helper_token,
        }
        write_private(args.info, json.dumps(info))
    sys.stdout.flush()
    _quiet_repeats()
    total = max(16, _open_files_limit() - 64)  # some kept for the file and the dashboards

    async def main() -> None:
        server = BoundedServer(
            app,
            xheaders=args.behind_proxy,
            max_body_size=MAX_BODY_BYTES,
            idle_connection_timeout=args.request_timeout,
            body_timeout=args.request_timeout,
        )
        server.per_address = args.connections_per_address
        server.total = total
        server.add_sockets(sockets)
        pusher = tornado.ioloop.PeriodicCallback(room.push, PUSH_EVERY_MS)
        pusher.start()
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        await stop.wait()
        pusher.stop()
        server.stop()
        for queue in list(room.listeners):
            queue.put_nowait(None)
        await server.close_all_connections()

    try:
        asyncio.run(main())
    finally:
        store.close()
    print(f"Room stopped; every event is in {store.path}.")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """The command line; returns the exit status."""
    args = _parser().parse_args(argv)
    if args.verb == "serve":
        return serve(args)
    return 2
