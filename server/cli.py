"""The `allnighter` command: `serve` runs the show, `bench` runs the benchmarks."""

from __future__ import annotations

import argparse
import faulthandler
import logging
import signal
import sys

from aiohttp import web

from .config import load_config


def serve(args: argparse.Namespace) -> int:
    from . import heap

    heap.fewer_arenas()  # before the models start their threads
    from .app import build_app

    cfg = load_config(args.config)
    if args.host:
        cfg.host = args.host
    if args.port:
        cfg.port = args.port
    app = build_app(cfg)
    url = f"http://{cfg.host}:{cfg.port}"
    print(f"Allnighter: viewers at {url}/  hosts at {url}/host", flush=True)
    if cfg.token_generated:
        print(
            f"host token (generated; set ALLNIGHTER_HOST_TOKEN to fix it): {cfg.host_token}",
            flush=True,
        )
    web.run_app(app, host=cfg.host, port=cfg.port, print=None)
    return 0


def bench(args: argparse.Namespace) -> int:
    # a long bench that stops moving can be asked where it is: kill -USR1 prints every
    # thread's stack to file descriptor 2, the process's own stderr (what a caller put in
    # sys.stderr, pytest's capture say, may have no descriptor to write to from a signal)
    faulthandler.register(signal.SIGUSR1, file=2)
    if args.what == "latency":
        from .bench.latency import main as run
    elif args.what == "lipsync":
        from .bench.lipsync import main as run
    elif args.what == "clock":
        from .bench.clock import main as run
    elif args.what == "abuse":
        from .bench.abuse import main as run
    elif args.what == "nights":
        from .bench.nights import main as run
    elif args.what == "roles":
        from .bench.roles import main as run
    else:
        from .bench.viewers import main as run
    return run(args)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="allnighter", description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("serve", help="run the show")
    p.add_argument("--host", help="bind address (default 127.0.0.1)")
    p.add_argument("--port", type=int, help="port (default 8080)")
    p.add_argument("--config", help="TOML settings file")
    p.set_defaults(func=serve)
    b = sub.add_parser("bench", help="run a benchmark and print its table")
    benches = ["latency", "viewers", "lipsync", "clock", "abuse", "nights", "roles"]
    b.add_argument("what", choices=benches)
    b.add_argument("--config", help="TOML settings file")
    b.add_argument(
        "--lines",
        type=int,
        default=20,
        help="latency: lines and prompts each; nights: lines spoken",
    )
    b.add_argument(
        "--peer-lines", type=int, default=20, help="latency: lines spoken against the peer"
    )
    b.add_argument("--viewers", default="10,25,50", help="viewers: counts to try")
    b.add_argument(
        "--seconds",
        type=float,
        default=60.0,
        help="viewers, lipsync: seconds per count; abuse: per attack",
    )
    b.add_argument("--utterances", type=int, default=100, help="lipsync: lines measured")
    b.add_argument(
        "--after-seconds", type=float, default=60.0, help="abuse: quiet after each attack"
    )
    b.add_argument(
        "--continuous-minutes",
        type=float,
        default=10.0,
        help="lipsync: minutes of continuous speech, for drift; 0: none",
    )
    b.add_argument("--leads", default="", help="lipsync: leads (ms) to try, e.g. 0,8,15")
    b.add_argument("--holds", default="", help="lipsync: with each lead, holds (ms) to try")
    b.add_argument(
        "--sweep-utterances", type=int, default=20, help="lipsync: lines for each lead tried"
    )
    b.add_argument("--pages", default="1,5,20", help="lipsync: pages open at once to try")
    b.add_argument(
        "--save",
        help="lipsync, nights (the real run): also write every figure measured to this JSON file",
    )
    b.add_argument("--requests", type=int, default=200, help="roles: dubbing requests sent at once")
    b.add_argument("--nights", type=int, default=30, help="nights: simulated nights; 0: none")
    b.add_argument(
        "--minutes", type=float, default=10.0, help="clock: simulated minutes measured a row"
    )
    b.add_argument(
        "--live-seconds",
        type=float,
        default=20.0,
        help="clock: seconds each live fixture (chronyd, ptp4l) is read; 0: none",
    )
    b.add_argument(
        "--live-minutes",
        type=float,
        default=60.0,
        help="nights: minutes of the real run (autopilot, pages, viewers, faults); 0: none",
    )
    b.set_defaults(func=bench)
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    for noisy in ("aioice", "aiortc", "engineio", "socketio", "aiohttp.access", "faster_whisper"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
