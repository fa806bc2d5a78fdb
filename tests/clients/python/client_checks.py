"""What the client check scripts share (check.py, thread_stream.py): the failure they stop
at, the check that raises it, the demo graph's input, and the hang guard."""

# A hang guard for the checks that wait for the server, not a timing claim.
DEADLINE_SECONDS = 60.0


class CheckFailed(Exception):
    """A check saw something other than what the API promises."""


def expect(condition, message):
    if not condition:
        raise CheckFailed(message)


def user(text, **extra):
    """The demo graph `agent`'s input: one user message, and any other state fields."""
    return {"messages": [{"role": "user", "content": text}], **extra}
