"""HTTP from the library to ``toolspan serve`` (``ServerApprover``, ``replay(url)``), standard library only:
an opener that never follows a redirect, since a request may carry a bearer token, and a redirect (to
another host, or from ``https`` to ``http``) would hand the token to wherever it points. A 3xx answer is an
``urllib.error.HTTPError`` the caller reports."""

from __future__ import annotations

import urllib.request
from typing import Any, Final

__all__ = ["OPENER"]


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Follows no redirect: ``urllib`` then raises the 3xx as an ``HTTPError``."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


OPENER: Final = urllib.request.build_opener(_NoRedirect)
