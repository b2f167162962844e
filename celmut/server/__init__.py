"""The admission webhook surface (``celmut serve``): FastAPI + uvicorn over TLS, on the runtime."""

DEFAULT_BACKGROUND_USER = "system:serviceaccount:celmut:celmut-controller"  # the Helm chart's controller
