"""Approvals, in one place: what an approver is given and answers (``approval``: ``ToolCall``, ``Approval``),
how the decision chain asks the approver of a call (``asking``: step 2 of ``toolspan._decisions.chain``), the
approvers toolspan ships (``book``: ``ApprovalBook``, a durable SQLite book; ``server``: ``ServerApprover``,
through ``toolspan serve``'s control channel), and the cancel requests such an approver delivers to the calls
it approved (``cancel``: ``check_cancelled``)."""
