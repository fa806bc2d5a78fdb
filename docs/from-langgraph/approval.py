from typing import Literal

from langchain.chat_models import init_chat_model
from langchain.messages import ToolMessage
from langchain.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command, interrupt


@tool
def send_email(to: str, body: str) -> str:
    """Send an email."""
    return f"Sent to {to}: {body}"


model = init_chat_model("openai:gpt-4.1").bind_tools([send_email])


def agent(state: MessagesState):
    return {"messages": [model.invoke(state["messages"])]}


def review(state: MessagesState) -> Command[Literal["tools", "agent"]]:
    call = state["messages"][-1].tool_calls[0]
    answer = interrupt({"question": "Send this email?", "args": call["args"]})
    if answer == "yes":
        return Command(goto="tools")
    refusal = ToolMessage(f"The user refused: {answer}", tool_call_id=call["id"])
    return Command(goto="agent", update={"messages": [refusal]})


builder = StateGraph(MessagesState)
builder.add_node("agent", agent)
builder.add_node("review", review)
builder.add_node("tools", ToolNode([send_email]))
builder.add_edge(START, "agent")
builder.add_conditional_edges("agent", tools_condition, {"tools": "review", END: END})
builder.add_edge("tools", "agent")
graph = builder.compile(checkpointer=InMemorySaver())

config = {"configurable": {"thread_id": "1"}}
request = {"role": "user", "content": "Tell ada@example.com the demo is at 3pm."}
result = graph.invoke({"messages": [request]}, config)
print(result["__interrupt__"][0].value)
result = graph.invoke(Command(resume="yes"), config)
print(result["messages"][-1].content)
