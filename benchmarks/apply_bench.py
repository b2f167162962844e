"""Offline ``celmut apply`` of 2,000 realistic Pods through 20 policies vs. its I/O floor.

The floor is what the same interpreter needs to read the same YAML stream with libyaml's C loader
and write it as JSON with orjson (in a fresh process, like the command). celmut runs
``celmut apply POLICIES -r pods.yaml -o json`` (and ``-o yaml``) in a fresh process; all are
timed side by side in one run, best of ``--repeat``. Figures only, no assertions.

    python benchmarks/apply_bench.py [--pods 2000] [--repeat 3] [--profile]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import table
from workloads import realistic_pod

from policies import benchmark_policies

FLOOR = """
import sys, orjson, yaml
with open(sys.argv[1]) as f:
    docs = [d for d in yaml.load_all(f.read(), Loader=yaml.CSafeLoader) if d is not None]
sys.stdout.buffer.write(orjson.dumps({"apiVersion": "v1", "kind": "List", "items": docs}, option=orjson.OPT_INDENT_2))
"""


def timed(command: list[str], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
        elapsed = time.perf_counter() - started
        if done.returncode not in (0, 1):
            raise SystemExit(f"{command[:4]} failed ({done.returncode}): {done.stderr.decode()[-2000:]}")
        best = min(best, elapsed)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", action="store_true", help="also print a cProfile of one celmut -o json run")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="celmut-apply-bench-"))
    policy_dir = work / "policies"
    policy_dir.mkdir()
    for policy in benchmark_policies():
        (policy_dir / f"{policy['metadata']['name']}.yaml").write_text(yaml.safe_dump(policy))
    pods = [realistic_pod(f"checkout-{i}") for i in range(args.pods)]
    resources = work / "pods.yaml"
    resources.write_text(yaml.safe_dump_all(pods, sort_keys=False))
    size_mb = resources.stat().st_size / 2**20

    apply = [sys.executable, "-m", "celmut", "apply", str(policy_dir), "-r", str(resources)]
    floor = timed([sys.executable, "-c", FLOOR, str(resources)], args.repeat)
    runs = {
        "floor: libyaml read + orjson write": floor,
        "celmut apply -o json": timed([*apply, "-o", "json"], args.repeat),
        "celmut apply -o yaml": timed([*apply, "-o", "yaml"], args.repeat),
    }
    print(f"{args.pods:,} Pods ({size_mb:.1f} MiB of YAML) through 20 policies (5 matching); best of {args.repeat}")
    rows = [[name, f"{seconds:.2f}", f"{seconds / floor:.2f}×"] for name, seconds in runs.items()]
    print(table("", ["run", "seconds", "× floor"], rows))
    if args.profile:
        profile = work / "apply.prof"
        subprocess.run(
            [sys.executable, "-m", "cProfile", "-o", str(profile), "-m", "celmut", *apply[3:], "-o", "json"],
            stdout=subprocess.DEVNULL,
            check=False,
        )
        import pstats

        pstats.Stats(str(profile)).sort_stats("cumulative").print_stats(25)


if __name__ == "__main__":
    main()
