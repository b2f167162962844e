"""CEL engines behind one seam: a checked expression in, a :class:`~celmut.cel.engines.base.Program` out."""
