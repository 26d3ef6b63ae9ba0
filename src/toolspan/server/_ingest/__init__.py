"""Ingest: OTLP request bodies (HTTP and gRPC) parsed into the store's rows (``otlp``, ``protobuf``), in parse
workers beside the server (``parsers``), and the OTLP/gRPC services (``grpc``)."""
