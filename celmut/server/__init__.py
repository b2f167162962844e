"""The admission webhook surface (``celmut serve``): FastAPI + uvicorn over TLS, on the runtime."""
