"""``celmut compile FILE…``: print the policies that presets compile to.

PodMutations, spot webhook values files, GPU slicing configurations and pod pinning plans become
ordinary MutatingPolicies; this prints them as YAML so they can be read, tested, edited and applied
anywhere a hand-written policy runs. Policies already written as policies are checked, not printed.
``-`` reads standard input.
"""

from __future__ import annotations

import argparse

import yaml

from celmut.cli import inputs
from celmut.cli.help import BAD_INPUT, EXIT_BAD_INPUT, EXIT_OK
from celmut.errors import ConfigurationError
from celmut.service import flags

EXIT_CODES = {EXIT_OK: "the policies were printed", EXIT_BAD_INPUT: BAD_INPUT + "; no preset among the files"}


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("compile", help="print the policies presets compile to", description=__doc__)
    p.add_argument("paths", nargs="+", metavar="FILE", help="preset files or directories ('-': stdin)")
    inputs.add_skip_unsupported(p)
    flags.add(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from celmut.compile.pipeline import compile_documents
    from celmut.compile.presets import registry as presets

    inputs.check_stdin({"FILE": args.paths})
    backend = flags.chosen(args)
    if backend is None:
        return EXIT_BAD_INPUT
    documents = inputs.documents(args.paths)
    # Everything is compiled (so what is printed is known to compile, and nothing is skipped silently);
    # what is printed is what the presets generate.
    compilation = compile_documents(documents, backend, skip_unsupported=args.skip_unsupported)
    if not inputs.report(compilation, skip_unsupported=args.skip_unsupported):
        return EXIT_BAD_INPUT
    expanded, _ = presets.expand(documents)
    generated = [d.content for d in expanded if d.path.startswith("<generated")]
    if not generated:
        raise ConfigurationError("no preset documents found (PodMutation, spot values, GPU slicing, pinning plan)")
    print(yaml.safe_dump_all(generated, sort_keys=False, width=120), end="")
    return EXIT_OK
