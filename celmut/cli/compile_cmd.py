"""``celmut compile FILE…``: print the policies that presets compile to.

PodMutations, spot webhook values files, GPU slicing configurations and pod pinning plans become
ordinary MutatingPolicies; this prints them as YAML so they can be read, tested, edited and applied
anywhere a hand-written policy runs. Policies already written as policies are not printed.
Exit codes: 0 success, 2 invalid input.
"""

from __future__ import annotations

import argparse
import sys

import yaml

from celmut.compile.pipeline import compile_documents
from celmut.compile.presets import registry as presets
from celmut.service import flags
from celmut.sources.documents import Document, DocumentError, load_documents

EXIT_OK, EXIT_BAD_INPUT = 0, 2


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("compile", help="print the policies presets compile to", description=__doc__)
    p.add_argument("paths", nargs="+", metavar="FILE", help="preset files or directories")
    flags.add(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    backend = flags.chosen(args)
    if backend is None:
        return EXIT_BAD_INPUT
    try:
        documents: list[Document] = [d for path in args.paths for d in load_documents(path)]
    except DocumentError as ex:
        print(f"error: {ex}", file=sys.stderr)
        return EXIT_BAD_INPUT
    expanded, errors = presets.expand(documents)
    generated = [d.content for d in expanded if d.path.startswith("<generated")]
    if not errors:  # make sure what we print compiles
        errors = compile_documents([d for d in expanded if d.path.startswith("<generated")], backend).errors
    if errors:
        for error in errors:
            print(f"error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if not generated:
        print("error: no preset documents found (PodMutation, spot values, GPU slicing, pinning plan)", file=sys.stderr)
        return EXIT_BAD_INPUT
    print(yaml.safe_dump_all(generated, sort_keys=False, width=120), end="")
    return EXIT_OK
