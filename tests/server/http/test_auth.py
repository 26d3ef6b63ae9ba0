"""The bearer token (``server/_http/auth.py``): one parser for HTTP headers and gRPC metadata."""

from __future__ import annotations

import pytest

from toolspan.server._http.auth import bearer_token, token_matches


@pytest.mark.parametrize(
    ("header", "token"),
    [
        (b"Bearer s3cret", b"s3cret"),
        (b"bearer s3cret", b"s3cret"),
        (b"BEARER s3cret", b"s3cret"),
        (b"  Bearer   s3cret  ", b"s3cret"),
        ("Bearer s3cret", b"s3cret"),  # gRPC metadata arrives as text
        (b"Bearer S3CRET", b"S3CRET"),  # the token keeps its case
        (b"Basic czNjcmV0", b""),
        (b"Bearers3cret", b""),
        (b"", b""),
        ("Bearer s\u00e9cret", "s\u00e9cret".encode("latin-1")),
        ("Bearer \u2603", b"?"),  # outside Latin-1: never the token
    ],
)
def test_one_bearer_parser_for_http_and_grpc(header: bytes | str, token: bytes) -> None:
    assert bearer_token(header) == token
    assert token_matches(bearer_token(header), b"s3cret") is (token == b"s3cret")
    assert not token_matches(b"", b"")
