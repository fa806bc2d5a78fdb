import operator
from typing import Annotated, TypedDict

from langchain.chat_models import init_chat_model
from langgraph.graph import END, START, StateGraph
from langgraph.types import Send
from pydantic import BaseModel


class Subjects(BaseModel):
    subjects: list[str]


class Joke(BaseModel):
    joke: str


class BestJoke(BaseModel):
    id: int


class Overall(TypedDict):
    topic: str
    subjects: list[str]
    jokes: Annotated[list[str], operator.add]
    best_joke: str


model = init_chat_model("anthropic:claude-sonnet-4-5")


def generate_topics(state: Overall):
    prompt = f"Name three subjects related to {state['topic']}."
    return {"subjects": model.with_structured_output(Subjects).invoke(prompt).subjects}


def continue_to_jokes(state: Overall):
    return [Send("generate_joke", {"subject": s}) for s in state["subjects"]]


def generate_joke(state: dict):
    prompt = f"Write a joke about {state['subject']}."
    return {"jokes": [model.with_structured_output(Joke).invoke(prompt).joke]}


def best_joke(state: Overall):
    jokes = "\n".join(f"{i}: {joke}" for i, joke in enumerate(state["jokes"]))
    prompt = f"Which joke about {state['topic']} is best? Give its id.\n{jokes}"
    best = model.with_structured_output(BestJoke).invoke(prompt)
    return {"best_joke": state["jokes"][best.id]}


builder = StateGraph(Overall)
builder.add_node("generate_topics", generate_topics)
builder.add_node("generate_joke", generate_joke)
builder.add_node("best_joke", best_joke)
builder.add_edge(START, "generate_topics")
builder.add_conditional_edges("generate_topics", continue_to_jokes, ["generate_joke"])
builder.add_edge("generate_joke", "best_joke")
builder.add_edge("best_joke", END)
graph = builder.compile()

print(graph.invoke({"topic": "animals"})["best_joke"])
