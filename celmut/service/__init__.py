"""The service floor, between the runtime and the surfaces: what the webhook, the controller and the
CLI share.

- :mod:`.assembly` — the one function that assembles an admission engine from plain settings;
- :mod:`.store` — the policy store: sources → compiled policies → engine, swapped on reload;
- :mod:`.offline` — the offline cluster ``celmut apply`` and ``celmut test`` run on;
- :mod:`.static_resources` — the in-memory lookup provider (files as a cluster);
- :mod:`.flags` — command-line flags every surface shares.

No I/O of its own beyond reading policy files through :mod:`celmut.sources`; the cluster arrives
through the lookups a surface passes in.
"""
