"""Presets compiled into ordinary CEL policies (never a side path).

A preset compiler claims the documents it understands (a PodMutation, a spot webhook values file, a
GPU slicing configuration, a pod pinning plan) and turns them into MutatingPolicy documents, which
then go through the same loader, compiler and runtime as hand-written policies — so ``celmut
compile`` can print them and they run anywhere a hand-written policy runs.

The compilers are listed in :data:`.registry.COMPILERS` (an explicit tuple); each gets all the
documents it claims at once (the PodMutation compiler needs the whole set to choose the most specific
one per pod). :mod:`.base` defines what a compiler is. This package module imports nothing, so a
preset module can import :mod:`.base` and :mod:`.placement` without a cycle.
"""
