"""Serve the stand-in Gemini API (tests, demo, benchmarks) on the loopback interface.

It prints GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:PORT (one line, flushed) and
serves until SIGTERM or SIGINT (Ctrl+C). Point the SDK at it with that variable
and any GEMINI_API_KEY; nothing it serves comes from Gemini.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading

from .server import StubServer


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
    args = parser.parse_args(argv)
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
        while not done.wait(0.5):
            pass
    finally:
        stub.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
