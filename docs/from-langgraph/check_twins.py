"""Runs the four LangGraph twins of docs/from-langgraph.md offline.

A test double stands in for `init_chat_model`: it answers each call from a fixed script,
as the Rust examples' scripted models do, so the Python and the Rust runs can be compared.
It is not counted in the table and is not part of the twins.

    pip install 'langgraph==1.2.*' 'langchain==1.5.*'
    python docs/from-langgraph/check_twins.py
"""

import ast
import contextlib
import io
import json
import pathlib
import runpy

import langchain.chat_models
from langchain_core.messages import AIMessage

HERE = pathlib.Path(__file__).parent


class FakeModel:
    """Answers `invoke` with `reply(messages, schema)`; records nothing, calls no network."""

    def __init__(self, reply, schema=None):
        self.reply, self.schema = reply, schema

    def bind_tools(self, tools):
        return self

    def with_structured_output(self, schema):
        return FakeModel(self.reply, schema)

    def invoke(self, messages):
        if isinstance(messages, str):
            messages = [{"role": "user", "content": messages}]
        answer = self.reply(messages, self.schema)
        return answer if self.schema is None else self.schema(**answer)


def text(message):
    return message["content"] if isinstance(message, dict) else message.content


def tool_result(messages):
    last = messages[-1]
    return last.content if getattr(last, "type", "") == "tool" else None


def chatbot(messages, schema):
    result = tool_result(messages)
    if result is None:
        return AIMessage(
            "", tool_calls=[{"name": "add", "args": {"a": 3, "b": 4}, "id": "1"}]
        )
    if result == "7.0":
        return AIMessage(
            "", tool_calls=[{"name": "multiply", "args": {"a": 7, "b": 5}, "id": "2"}]
        )
    return AIMessage(f"(3 + 4) * 5 = {float(result):g}")


def map_reduce(messages, schema):
    prompt = text(messages[-1])
    if schema.__name__ == "Subjects":
        return {"subjects": ["cats", "owls", "penguins"]}
    if schema.__name__ == "Joke":
        jokes = {
            "owls": "Owls give a hoot about homework.",
            "cats": "Cats never lose an argument: they just walk off.",
        }
        subject = prompt.removeprefix("Write a joke about ").rstrip(".")
        return {
            "joke": jokes.get(subject, "Penguins dress formally for every occasion.")
        }
    assert "1: Owls give a hoot" in prompt, "jokes in the order sent"
    return {"id": 1}


def supervisor(messages, schema):
    if schema is not None:
        turns = sum(1 for m in messages if getattr(m, "type", "") == "ai")
        return {"next": ["researcher", "writer", "FINISH"][turns]}
    if text(messages[0]) == "Find the facts the question needs.":
        return AIMessage("Fact: 384,400 km on average.")
    return AIMessage("The Moon is about 384,400 km away.")


def approval(messages, schema):
    sent = tool_result(messages)
    if sent is None:
        args = {"to": "ada@example.com", "body": "The demo is at 3pm."}
        return AIMessage(
            "", tool_calls=[{"name": "send_email", "args": args, "id": "1"}]
        )
    assert sent == "Sent to ada@example.com: The demo is at 3pm.", sent
    return AIMessage("Done: Ada knows the demo is at 3pm.")


EXPECTED = {
    "chatbot": ["(3 + 4) * 5 = 35"],
    "map_reduce": ["Owls give a hoot about homework."],
    "supervisor": ["The Moon is about 384,400 km away."],
    "approval": [
        json.dumps(
            {
                "question": "Send this email?",
                "args": {"to": "ada@example.com", "body": "The demo is at 3pm."},
            }
        ),
        "Done: Ada knows the demo is at 3pm.",
    ],
}

for name, script in [
    ("chatbot", chatbot),
    ("map_reduce", map_reduce),
    ("supervisor", supervisor),
    ("approval", approval),
]:
    langchain.chat_models.init_chat_model = lambda spec, script=script: FakeModel(
        script
    )
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        runpy.run_path(str(HERE / f"{name}.py"))
    printed = out.getvalue().splitlines()
    if name == "approval":
        printed[0] = json.dumps(ast.literal_eval(printed[0]))
    assert printed == EXPECTED[name], (name, printed)
    print(f"{name}: ok ({printed[-1]})")
