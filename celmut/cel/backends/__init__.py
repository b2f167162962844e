"""CEL engines behind one seam: a checked expression in, a :class:`~celmut.cel.backends.base.Program` out."""
