"""The ``celmut`` command line: one module per subcommand, wired together in :mod:`celmut.main`."""
