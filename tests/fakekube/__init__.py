"""An in-repo fake Kubernetes API server for end-to-end tests of celmut's webhook and controller.

It speaks the real REST + watch protocol over HTTP(S) on 127.0.0.1, so the official ``kubernetes`` client
(typed APIs, ``CustomObjectsApi``, ``DynamicClient``, ``watch.Watch``) is exercised for real: a wrong URL,
verb, content type or patch format fails. See :mod:`tests.fakekube.server` for the control API and
:mod:`tests.fakekube.fixtures` for the pytest fixtures (``fake_apiserver``, ``fake_api_client``).
"""

from .errors import ApiError
from .server import DEFAULT_TOKEN, DEFAULT_USER, FakeApiServer, Fault, RequestRecord
from .store import Store

__all__ = ["DEFAULT_TOKEN", "DEFAULT_USER", "ApiError", "FakeApiServer", "Fault", "RequestRecord", "Store"]
