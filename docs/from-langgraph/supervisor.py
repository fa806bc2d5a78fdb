from typing import Literal

from langchain.chat_models import init_chat_model
from langchain.messages import SystemMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Command
from pydantic import BaseModel

model = init_chat_model("openai:gpt-4.1")


class Route(BaseModel):
    next: Literal["researcher", "writer", "FINISH"]


def supervisor(
    state: MessagesState,
) -> Command[Literal["researcher", "writer", "__end__"]]:
    system = SystemMessage("Pick researcher or writer to act next, or FINISH.")
    route = model.with_structured_output(Route).invoke([system, *state["messages"]])
    return Command(goto=END if route.next == "FINISH" else route.next)


def worker(prompt: str):
    def node(state: MessagesState):
        reply = model.invoke([SystemMessage(prompt), *state["messages"]])
        return {"messages": [reply]}

    return node


builder = StateGraph(MessagesState)
builder.add_node("supervisor", supervisor)
builder.add_node("researcher", worker("Find the facts the question needs."))
builder.add_node("writer", worker("Answer the question from the facts found."))
builder.add_edge(START, "supervisor")
builder.add_edge("researcher", "supervisor")
builder.add_edge("writer", "supervisor")
graph = builder.compile()

result = graph.invoke(
    {"messages": [{"role": "user", "content": "How far is the Moon?"}]}
)
print(result["messages"][-1].content)
