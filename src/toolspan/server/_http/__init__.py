"""HTTP: the Starlette application, its routes, pages and OpenAPI document, and the runner."""
