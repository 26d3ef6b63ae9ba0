"""The control channel of ``toolspan serve``: decide tool calls that wait for an approval, and cancel
running ones, from a frontend or a script; the application's ``toolspan.ServerApprover`` waits here for them.
Its reads are ``queries``, its writes ``writes`` (an edit checked by ``edits``), what both say of a call
``calls``; who may write is ``_http.auth.decider``.

Who may do what (``_http.auth``): the application's token (``--token``) sends spans and reads,
the GET routes below included (its approver long-polls them); only a decider token (``--decider
NAME=TOKEN``) decides and cancels, and what it does is recorded as its name. A server without deciders
answers every decision and cancel request 403.

Reads:

- ``GET /api/control/waiting``: the inbox, one entry per tool span that waits for a decision (two calls that
  share a model call id are two entries), oldest first: whatever the number of calls that never ended (the
  waiting spans are indexed), without the calls whose application stopped asking for their decision (it
  died) more than ``--stale-after`` seconds ago. Each entry names the exact call (``execution_id``,
  ``trace_id``, ``span_id``), shows its arguments as recorded and their digest ``arguments_sha256`` (what a
  decision must echo as ``shown``), and the decision made on it that its application has not yet applied
  (``decision``). ``?limit=`` (at most 1000) and ``?after=`` (the ``next`` of the previous page) page it.
- ``GET /api/control/decisions/{execution_id}?trace_id=&wait=S``: the decision on that call (``null`` until
  made), waiting up to ``S`` seconds (at most 30) for it: the application's approver long-polls here, which
  tells the server its application is alive. With ``call_id``, ``tool`` and ``shown`` (the call's digest), it
  also says ``resumes``: a decision on another span of the same model call, tool and arguments whose
  application stopped asking before it could apply it (it died while the call waited): the same call,
  re-issued after a restart, takes it.
- ``GET /api/control/cancels?execution_id=...&wait=S``: the cancel requests for the running calls named.

Writes, ``POST`` with a JSON body (``Content-Type: application/json``), always with a decider token in the
``Authorization`` header (also on 127.0.0.1): no cookie, no query token, and a request whose ``Origin`` is
not this server's own (or a ``--cors-origin``) is refused, so no other web page can send one. Bodies are
parsed strictly (``jsonio.parse_object``: ``NaN``, ``1e999``, lone surrogates and deep nesting are a 400
naming the field), and a field a route does not take is a 400 naming it (``by`` included: who decided is
the token's name):

- ``POST /api/control/decisions`` ``{execution_id, trace_id?, decision: allow|deny, shown, arguments?,
  note?}``: given to that call only. ``shown`` (its ``arguments_sha256``) not matching what the span recorded
  is a 409, an edit (``arguments``, with ``allow`` only) that does not fit the tool's recorded parameter
  schema a 422 (``edits``); the first decision wins (200); the same one again answers 200 with the same
  body, another is refused (409, with the decision that stands); a call that does not wait is refused (404
  unknown, 409 running or ended, with its state);
- ``POST /api/control/cancels`` ``{execution_id, trace_id?, note?}``: asks the application to cancel a
  running call (202; again: 200 with the same body); a call that already ended answers 409 with its state, a
  call still waiting 409 (deny it instead).

A decision or cancel request wakes the long polls waiting for it at once, on every replica of a shared store
(the store's control notifications), and a long poll whose client hung up ends then, freeing its connection.
"""
