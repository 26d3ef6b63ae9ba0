"""Ingest: OTLP request bodies (HTTP and gRPC) parsed into the store's rows."""
