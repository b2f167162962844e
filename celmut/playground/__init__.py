"""The playground surface (``celmut playground``): a local web page to try policies and see every field
they change and why. :mod:`~celmut.playground.command` is the command; the page's assets are in
``static/`` (package data: no build step, no CDN)."""
