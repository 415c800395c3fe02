"""Serve the stand-in Gemini API (tests, demo, benchmarks) on the loopback interface.

It prints GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:PORT (one line, flushed) and
serves until SIGTERM or SIGINT (Ctrl+C). Point the SDK at it with that variable
and any GEMINI_API_KEY; nothing it serves comes from Gemini.

Given a command (genai-magics-stub jupyter lab), it runs that command with the
variable and a placeholder key set (any other Gemini key or Vertex AI setting
left out, so nothing reaches Gemini) and serves until the command exits, with
its exit status.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import threading

from .server import StubServer

PLACEHOLDER_KEY = "stand-in"  # the stand-in checks only that a key is there
# what would send the command's SDK clients elsewhere, or a real key to the stand-in
_LEFT_OUT = ("GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION")


def command_env(url: str, environ: dict[str, str]) -> dict[str, str]:
    """The command's environment: the SDK pointed at the stand-in with a placeholder key."""
    env = {name: value for name, value in environ.items() if name not in _LEFT_OUT}
    env.update(GOOGLE_GEMINI_BASE_URL=url, GEMINI_API_KEY=PLACEHOLDER_KEY)
    return env


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m genai_magics.stub", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--port", type=int, default=0, help="TCP port (0 picks a free one)")
    parser.add_argument("--host", default="127.0.0.1", help="loopback only: 127.0.0.1 or localhost")
    parser.add_argument(
        "--chunk-delay", type=float, default=0.0, metavar="SECONDS", help="seconds between streamed chunks"
    )
    parser.add_argument(
        "--token-rate",
        type=float,
        default=0.0,
        metavar="N",
        help="stream answers at N output tokens a second, so output length shows as time (0: as fast as it can)",
    )
    parser.add_argument(
        "--implicit-caching",
        action="store_true",
        help="report identical prefixes of earlier requests as cached tokens (off by default)",
    )
    parser.add_argument(
        "command",
        nargs=argparse.REMAINDER,
        help="a command to run on the stand-in (e.g. jupyter lab); it serves until the command exits",
    )
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    try:
        stub = StubServer(
            port=args.port,
            host=args.host,
            chunk_delay=args.chunk_delay,
            implicit_caching=args.implicit_caching,
            token_rate=args.token_rate,
        )
    except (ValueError, OSError) as exc:
        print(f"genai_magics.stub: {exc}", file=sys.stderr, flush=True)
        return 2
    done = threading.Event()

    def _stop(signum: int, frame: object) -> None:
        done.set()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    stub.start()
    print(f"GOOGLE_GEMINI_BASE_URL={stub.url}", flush=True)
    try:
        if command:
            return _run(command, stub.url, done)
        while not done.wait(0.5):
            pass
    finally:
        stub.stop()
    return 0


def _run(command: list[str], url: str, done: threading.Event) -> int:
    """The command's exit status; SIGTERM to the stand-in ends the command too. Ctrl+C reaches the
    command by itself (one process group) and is left to it: JupyterLab asks before it stops."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        proc = subprocess.Popen(command, env=command_env(url, dict(os.environ)))
    except OSError as exc:
        print(f"genai_magics.stub: {command[0]}: {exc.strerror or exc}", file=sys.stderr, flush=True)
        return 127
    while proc.poll() is None:
        if done.wait(0.5):
            proc.terminate()
            try:
                return proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                return proc.wait()
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
