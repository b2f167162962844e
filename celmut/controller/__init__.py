"""The background controller (``celmut controller``): mutateExisting and pod replacement.

Built on the runtime's pure mutateExisting functions (:mod:`celmut.runtime.mutate_existing`) and
the cluster edge in :mod:`celmut.kube`; see :mod:`celmut.controller.run` for how the parts fit.
"""
