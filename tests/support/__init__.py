"""Helpers the tests share, imported one way: ``from tests.support.NAME import ...``."""
