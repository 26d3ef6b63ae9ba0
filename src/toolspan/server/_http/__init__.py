"""HTTP: the table of routes (``registry``) and a module per resource (``routes``) over the server's state
(``state``), who may do what (``auth``), the guards of every response (``guards``), JSON in and out
(``jsonio``), the application built from them (``app``), and the runner (``serve``, ``listen``)."""
