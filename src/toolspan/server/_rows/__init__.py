"""Rows: what every layer of the server shares and nothing of the server imports below it: a span's row and
its stored forms, the event log's phases and cursors, the control channel's rows, how a row type declares its
table's columns (``columns``), and the errors a layer raises for another to answer."""
