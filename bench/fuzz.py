"""Bad input at scale: the schemathesis run over the complete OpenAPI (memory and exchange
routes; phases examples, coverage and fuzzing) and the hook payload fuzzer, with many more
examples than the test suite uses. Pass: no response >= 500, every refusal a 4xx envelope that
wrote nothing. Runs the same tests as `make test`, against the test database of DATABASE_URL.

    DATABASE_URL=postgres://engram@127.0.0.1:5432/engram_reliability \\
        .venv/bin/python bench/fuzz.py --examples 200
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TESTS = [
    "tests/memory/test_openapi.py",
    "tests/exchange/test_openapi.py",
    "tests/memory/test_hook_fuzz.py",
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=200, help="per operation / per test")
    parser.add_argument("--phases", default="examples,coverage,fuzzing")
    parser.add_argument("--timeout", type=int, default=3600, help="seconds for the whole run")
    args = parser.parse_args()
    env = dict(os.environ)
    env["ENGRAM_FUZZ_EXAMPLES"] = str(args.examples)
    env["ENGRAM_FUZZ_PHASES"] = args.phases
    env.setdefault("SECRET_KEY", "engram-bench-fuzz-secret-not-for-production")
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "pytest", *TESTS, "-q", "-p", "no:cacheprovider"],
        cwd=ROOT,
        env=env,
        timeout=args.timeout,
        check=False,
    )
    print(
        f"\nfuzz: {args.examples} examples per operation, phases {args.phases}: "
        f"{'PASS (0 responses >= 500)' if result.returncode == 0 else 'FAIL'} "
        f"in {time.monotonic() - started:.0f} s"
    )
    return result.returncode


if __name__ == "__main__":
    raise SystemExit(main())
