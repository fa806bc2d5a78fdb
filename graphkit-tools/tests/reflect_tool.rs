//! The LLM-backed reflect tool, driven by graphkit-llm's test doubles.

#![allow(clippy::unwrap_used)] // tests may unwrap: a panic is a failed test

use graphkit_llm::{FunctionModel, Message, ScriptedModel};
use graphkit_tools::prebuilt::reflect::{ReflectTool, Reflection};
use graphkit_tools::{AgentState, Tool, ToolError, ToolOutput, ToolRuntime};
use serde_json::json;

const TOOLS: [&str; 3] = ["url_crawler", "further_event_research", "stop"];

fn reply(recommendation: &str) -> String {
    json!({
        "summary": "Three events found.",
        "gaps": ["career dates"],
        "recommendation": recommendation,
        "reason": "Britannica is not crawled yet."
    })
    .to_string()
}

#[tokio::test]
async fn a_reflection_sends_the_notes_and_the_allowed_set_and_returns_the_recommendation() {
    let model = ScriptedModel::new([reply(" URL_Crawler ")]);
    let think = ReflectTool::new(model.clone(), TOOLS).with_instructions("Reflect on a biography.");
    let reflection = think.reflect("url_finder: 3 URLs").await.unwrap();
    assert_eq!(
        reflection,
        Reflection {
            summary: "Three events found.".into(),
            gaps: vec!["career dates".into()],
            recommendation: "url_crawler".into(), // the configured spelling
            reason: "Britannica is not crawled yet.".into(),
            rejected_recommendation: None,
        }
    );
    let requests = model.requests();
    assert_eq!(requests.len(), 1);
    let system = requests[0].messages[0].text();
    assert!(system.starts_with("Reflect on a biography."), "{system}");
    assert!(
        system.contains("exactly one of: `url_crawler`, `further_event_research`, `stop`, `none`"),
        "{system}"
    );
    assert_eq!(requests[0].messages[1].text(), "url_finder: 3 URLs");
    let format = requests[0]
        .response_format
        .as_ref()
        .expect("structured output");
    assert!(
        format.schema["properties"]["recommendation"].is_object(),
        "{:?}",
        format.schema
    );
}

#[tokio::test]
async fn a_recommendation_outside_the_set_is_asked_again_with_the_allowed_set() {
    let model = ScriptedModel::new([reply("google_search"), reply("stop")]);
    let think = ReflectTool::new(model.clone(), TOOLS);
    let reflection = think.reflect("notes").await.unwrap();
    assert_eq!(reflection.recommendation, "stop");
    assert_eq!(reflection.rejected_recommendation, None);
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    let correction = requests[1].messages.last().unwrap().text();
    assert!(
        correction.contains("`google_search` is not an allowed recommendation")
            && correction.contains("url_crawler, further_event_research, stop, none"),
        "{correction}"
    );
    // The model sees its own rejected answer before the correction.
    assert!(matches!(requests[1].messages[2], Message::Assistant(_)));
}

#[tokio::test]
async fn a_recommendation_outside_the_set_twice_falls_back_and_keeps_the_rejected_value() {
    let model = FunctionModel::from_text(|_| reply("google_search"));
    let reflection = ReflectTool::new(model, TOOLS)
        .reflect("notes")
        .await
        .unwrap();
    assert_eq!(reflection.recommendation, "none");
    assert_eq!(
        reflection.rejected_recommendation.as_deref(),
        Some("google_search")
    );
    assert_eq!(reflection.reason, "Britannica is not crawled yet.");

    let model = FunctionModel::from_text(|_| reply("google_search"));
    let think = ReflectTool::new(model, TOOLS).with_fallback("STOP");
    assert_eq!(
        think.allowed(),
        ["url_crawler", "further_event_research", "stop", "none"]
    );
    let reflection = think.reflect("notes").await.unwrap();
    assert_eq!(reflection.recommendation, "stop");
}

#[tokio::test]
async fn an_unreadable_reply_or_blank_notes_are_clear_errors() {
    let model = ScriptedModel::new(["not json", "still not json"]);
    let err = ReflectTool::new(model, TOOLS)
        .reflect("notes")
        .await
        .unwrap_err();
    assert!(matches!(err, ToolError::Failed(_)), "{err:?}");
    assert!(err.to_string().contains("still not json"), "{err}");

    let model = ScriptedModel::new(Vec::<String>::new());
    let err = ReflectTool::new(model.clone(), TOOLS)
        .reflect("  ")
        .await
        .unwrap_err();
    assert!(err.to_string().contains("`notes` is empty"), "{err}");
    assert!(model.requests().is_empty());
}

#[tokio::test]
async fn as_a_tool_it_answers_with_the_reflection_as_json() {
    let model = ScriptedModel::new([reply("further_event_research")]);
    let think = ReflectTool::new(model, TOOLS).with_name("think_tool");
    assert_eq!(Tool::<AgentState>::name(&think), "think_tool");
    assert_eq!(
        Tool::<AgentState>::parameters(&think)["required"],
        json!(["notes"])
    );
    let rt = ToolRuntime::detached(AgentState::default(), "call_1", "t");
    let out = Tool::<AgentState>::call(&think, json!({"notes": "crawl done"}), rt)
        .await
        .unwrap();
    let ToolOutput::Content(text) = out else {
        panic!("expected content, got {out:?}");
    };
    let reflection: Reflection = serde_json::from_str(&text).unwrap();
    assert_eq!(reflection.recommendation, "further_event_research");

    let rt = ToolRuntime::detached(AgentState::default(), "call_2", "t");
    let err = Tool::<AgentState>::call(&think, json!({}), rt)
        .await
        .unwrap_err();
    assert!(matches!(err, ToolError::InvalidArguments { .. }), "{err:?}");
}
