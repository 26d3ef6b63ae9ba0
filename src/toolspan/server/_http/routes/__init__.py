"""The server's routes, a module per resource: OTLP ingest, traces (the read API), the trace views, the live
streams, the control channel, the HTML pages and the OpenAPI document. Each handler takes the server's state
and the request; ``registry.ROUTES`` lists them all, once."""
