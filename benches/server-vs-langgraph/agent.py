"""The Python twin of graphkit-server's demo graph `agent` (graphkit-server/src/demo.rs),
served by `langgraph dev` for benches/server-vs-langgraph.sh.

State: `messages` (appended `{role, content}` dicts), `sleep` (seconds), `ask_human`.
START -> respond, which sleeps `sleep` seconds and appends
`{"role": "assistant", "content": "echo: " + the last user message}`; then `human` if
`ask_human` (an interrupt asking "approve?"), else END.
"""

import asyncio
import operator
from typing import Annotated, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt


class AgentState(TypedDict, total=False):
    messages: Annotated[list[dict], operator.add]
    sleep: float
    ask_human: bool


async def respond(state: AgentState) -> dict:
    if state.get("sleep", 0) > 0:
        await asyncio.sleep(state["sleep"])
    last_user = next(
        (m["content"] for m in reversed(state.get("messages", [])) if m.get("role") == "user"),
        "",
    )
    return {"messages": [{"role": "assistant", "content": f"echo: {last_user}"}]}


async def human(state: AgentState) -> dict:
    answer = interrupt({"question": "approve?"})
    content = answer if isinstance(answer, str) else str(answer)
    return {"messages": [{"role": "human", "content": content}]}


builder = StateGraph(AgentState)
builder.add_node("respond", respond)
builder.add_node("human", human)
builder.add_edge(START, "respond")
builder.add_conditional_edges(
    "respond", lambda s: "human" if s.get("ask_human") else END, ["human", END]
)
builder.add_edge("human", END)
graph = builder.compile()
