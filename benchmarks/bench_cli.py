"""Times how fast the fma-bands command starts: `fma-bands --help` and a few subcommand helps,
as whole processes (what a coordinator waits for), and prints a markdown table.

Run from the repository root: `python -m benchmarks.bench_cli [--repeat 15]`.
Its target is in docs/design.md, Quality bar.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time

COMMANDS = (
    ["--help"],
    ["export", "--help"],
    ["user", "add", "--help"],
    ["agreement", "--help"],
)


def fma_bands() -> list[str]:
    found = shutil.which("fma-bands", path=os.path.dirname(sys.executable))
    return [found] if found else [sys.executable, "-m", "fma_bands.cli"]


def time_command(args: list[str], repeat: int) -> list[float]:
    timings = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run([*fma_bands(), *args], check=True, capture_output=True)
        timings.append(time.perf_counter() - start)
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    options = parser.parse_args()
    print("| command | min | median | max | runs |\n|---|---|---|---|---|")
    for args in COMMANDS:
        t = time_command(args, options.repeat)
        print(
            f"| `fma-bands {' '.join(args)}` | {min(t) * 1000:.0f} ms | "
            f"{statistics.median(t) * 1000:.0f} ms | {max(t) * 1000:.0f} ms | {len(t)} |"
        )


if __name__ == "__main__":
    main()
