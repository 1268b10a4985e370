"""The ways to put the engine in front of a client: each a thin adapter over `sandbox.engine`.

`_transport` an httpx transport (and its httpx2 twin for the official SDKs), `_mock` the providers'
real hosts intercepted with respx, `_asgi` the ASGI app (`_encodings` its request-body decoding),
`_serve` the `sandbox serve` runner on uvicorn (`_protocol` the bounds it adds to uvicorn's HTTP/1.1)
and `_tcp` the socket settings the servers share. Adapters carry bytes and keep the request journal;
every rule lives in the engine and the wire formats.
"""
