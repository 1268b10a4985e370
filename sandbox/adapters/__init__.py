"""The ways to put the engine in front of a client: each a thin adapter over `sandbox.engine`.

`_transport` an httpx transport (and its httpx2 twin for the official SDKs), `_journal` the request
journal each door keeps (and the helpers tests assert with), `_expectations` what a strict mount
checks in it, `_mock` the providers' real hosts intercepted with respx, `_asgi` the ASGI app
(`_encodings` its request-body decoding), `_serve` the `sandbox serve` runner on uvicorn (`_protocol`
the bounds it adds to uvicorn's HTTP/1.1), `_control` its control API, `_serving` the same server in a
thread for a test, `_record` the recording proxy of `sandbox record`, and `_tcp` the socket settings
the servers share. Adapters carry bytes and keep the request journal; every rule lives in the engine
and the wire formats.
"""
