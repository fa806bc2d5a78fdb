//! The offline stand-in (`StandInModel`, a test double) drives a small research graph
//! along the same path a real model's replies would: a structured plan parsed and
//! validated by `StructuredModel`, a real tool call routed to the tools node, and a final
//! answer once the tool result is in.

use std::sync::Arc;

use graphkit::{END, START, State, StateGraph};
use graphkit_llm::checks::non_empty;
use graphkit_llm::{ChatModel, ChatRequest, LlmError, Message, StandInModel, ToolCall, ToolSpec};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Research {
    #[reducer(merge_by_key)]
    messages: Vec<Message>,
    questions: Vec<String>,
    #[reducer(append)]
    visited: Vec<String>,
}

/// The research plan.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
struct Plan {
    questions: Vec<String>,
}

#[derive(Deserialize, JsonSchema)]
struct SearchArgs {
    query: String,
}

fn offline_model() -> StandInModel {
    StandInModel::new("research-offline")
        .on_structured(|req: &ChatRequest| Plan {
            questions: vec![format!("What is {}?", req.last_user_text())],
        })
        .on_tools(|req, _tools| match req.latest_tool_results().next() {
            None => {
                let question = req.last_user_text();
                ToolCall::new("search", json!({"query": question})).into()
            }
            Some(result) => format!("Answer: {}", result.content).into(),
        })
}

fn research_graph(model: StandInModel) -> graphkit::CompiledGraph<Research> {
    let planner = model
        .clone()
        .with_structured_output::<Plan>()
        .validate(|p| non_empty("questions", &p.questions));
    let agent = model.bind_tools([ToolSpec::from_args::<SearchArgs>(
        "search",
        "Search the corpus.",
    )]);
    let mut graph = StateGraph::<Research>::new();
    graph
        .add_node("plan", move |state: Arc<Research>| {
            let planner = planner.clone();
            async move {
                let plan = planner.invoke(&state.messages).await?;
                let ask = Message::user(plan.questions[0].clone());
                Ok::<_, LlmError>(
                    ResearchUpdate::new()
                        .questions(plan.questions)
                        .messages(vec![ask])
                        .visited(vec!["plan".to_owned()]),
                )
            }
        })
        .add_node("agent", move |state: Arc<Research>| {
            let agent = agent.clone();
            async move {
                let reply = agent.invoke(&state.messages).await?;
                Ok::<_, LlmError>(
                    ResearchUpdate::new()
                        .messages(vec![Message::from(reply)])
                        .visited(vec!["agent".to_owned()]),
                )
            }
        })
        .add_node("tools", |state: Arc<Research>| async move {
            let calls = state
                .messages
                .last()
                .map(Message::tool_calls)
                .unwrap_or(&[]);
            let results: Vec<Message> = calls
                .iter()
                .map(|call| {
                    let args: SearchArgs =
                        serde_json::from_value(call.arguments.clone()).expect("valid arguments");
                    Message::tool_result(
                        &call.id,
                        format!("the corpus says {} matters", args.query),
                    )
                })
                .collect();
            ResearchUpdate::new()
                .messages(results)
                .visited(vec!["tools".to_owned()])
        })
        .add_edge(START, "plan")
        .add_edge("plan", "agent")
        .add_conditional_edges(
            "agent",
            |state: &Research| {
                let calls_tools = state
                    .messages
                    .last()
                    .is_some_and(|m| !m.tool_calls().is_empty());
                if calls_tools { "tools" } else { END }
            },
            ["tools", END],
        )
        .add_edge("tools", "agent");
    graph.compile().expect("graph")
}

#[tokio::test]
async fn the_stand_in_takes_the_plan_tool_and_answer_path_a_real_model_would() {
    let model = offline_model();
    let graph = research_graph(model.clone());
    let out = graph
        .invoke(ResearchUpdate::new().messages(vec![Message::user("reducers")]))
        .await
        .expect("run")
        .into_state();
    assert_eq!(out.visited, ["plan", "agent", "tools", "agent"]);
    assert_eq!(out.questions, ["What is reducers?"]);
    assert_eq!(
        out.messages.last().map(Message::text),
        Some("Answer: the corpus says What is reducers? matters")
    );

    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(
        requests[0]
            .response_format
            .as_ref()
            .map(|f| f.name.as_str()),
        Some("Plan")
    );
    assert!(requests[1..].iter().all(|r| r.offers_tool("search")));
    let call = &requests[2].messages[2].tool_calls()[0];
    assert_eq!(call.arguments, json!({"query": "What is reducers?"}));
}

#[tokio::test]
async fn a_stand_in_plan_the_validators_reject_fails_the_node_as_a_weak_model_would() {
    let empty_plans = StandInModel::new("empty-planner")
        .on_structured(|_: &ChatRequest| Plan { questions: vec![] });
    let err = research_graph(empty_plans.clone())
        .invoke(ResearchUpdate::new().messages(vec![Message::user("x")]))
        .await
        .expect_err("an empty plan is never accepted");
    let text = err.to_string();
    assert!(
        text.contains("`questions` is empty; it must have at least one item"),
        "{text}"
    );
    assert_eq!(
        empty_plans.requests().len(),
        2,
        "one call and the default retry"
    );
}
