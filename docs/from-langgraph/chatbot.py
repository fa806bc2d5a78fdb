from langchain.chat_models import init_chat_model
from langchain.tools import tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition


@tool
def add(a: float, b: float) -> float:
    """Add a and b."""
    return a + b


@tool
def multiply(a: float, b: float) -> float:
    """Multiply a and b."""
    return a * b


@tool
def divide(a: float, b: float) -> float:
    """Divide a by b."""
    return a / b


tools = [add, multiply, divide]
model = init_chat_model("anthropic:claude-sonnet-4-5").bind_tools(tools)


def chatbot(state: MessagesState):
    return {"messages": [model.invoke(state["messages"])]}


builder = StateGraph(MessagesState)
builder.add_node("chatbot", chatbot)
builder.add_node("tools", ToolNode(tools))
builder.add_edge(START, "chatbot")
builder.add_conditional_edges("chatbot", tools_condition)
builder.add_edge("tools", "chatbot")
graph = builder.compile()

result = graph.invoke(
    {"messages": [{"role": "user", "content": "What is (3 + 4) * 5?"}]}
)
print(result["messages"][-1].content)
