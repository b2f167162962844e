"""CEL function libraries, one module per library; :mod:`celmut.cel.environment` assembles them."""
