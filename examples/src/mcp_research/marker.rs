//! [`Marker`]: the seed's streamed event protocol (`RESEARCH_START:`, `PHASE:`, ...), its
//! exact text forms, and the progress formula.

use serde::{Deserialize, Serialize};

use super::state::{ChartConfig, ResearchPhase, Source};

/// The statistics of `RESEARCH_COMPLETE:`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CompleteStats {
    /// Planning iterations run.
    pub iterations: u32,
    /// Documents read.
    pub docs_processed: u32,
    /// The overall confidence (0-1).
    pub confidence: f32,
}

/// One event of a research session's stream. [`to_line`](Self::to_line) gives the text the
/// seed's clients read (the SSE `data:`; the markdown report spans several lines).
///
/// ```
/// use graphkit_examples::mcp_research::{Marker, ResearchPhase};
///
/// assert_eq!(Marker::Phase(ResearchPhase::Aggregating).to_line(), "PHASE:aggregating");
/// assert_eq!(Marker::Progress(5).to_line(), "PROGRESS:5");
/// assert_eq!(Marker::FinalResponseStart.to_line(), "FINAL_RESPONSE_START:");
/// assert_eq!(Marker::parse("PROGRESS:13"), Marker::Progress(13));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "marker", content = "value", rename_all = "snake_case")]
pub enum Marker {
    /// `RESEARCH_START:{"session_id":"…"}`: the session started (or resumed).
    ResearchStart {
        /// The session id (for the status endpoint).
        session_id: String,
    },
    /// `PHASE:{phase}`, on every change.
    Phase(ResearchPhase),
    /// `PROGRESS:{0-100}`.
    Progress(u8),
    /// `THINKING:{step}`: one line of the research log.
    Thinking(String),
    /// `SOURCES:[{"title","url"}]`: the cumulative list, when it grows.
    Sources(Vec<Source>),
    /// `CHART_CONFIGS:[…]`: the cumulative list, when it grows.
    ChartConfigs(Vec<ChartConfig>),
    /// `FINAL_RESPONSE_START:`.
    FinalResponseStart,
    /// `MARKDOWN_CONTENT_START:`.
    MarkdownContentStart,
    /// The markdown report (one SSE event, one `data:` line per markdown line).
    MarkdownContent(String),
    /// `MARKDOWN_CONTENT_END:`.
    MarkdownContentEnd,
    /// `RESEARCH_COMPLETE:{"iterations","docs_processed","confidence"}`.
    ResearchComplete(CompleteStats),
    /// `ERROR:{"message":…}`: the run failed (the stream ends; the session resumes from its
    /// last checkpoint when posted again with its `session_id`).
    Error {
        /// What went wrong and what to do.
        message: String,
    },
}

impl Marker {
    /// A `THINKING:` line (newlines become spaces: a marker is one line).
    pub fn thinking(text: impl AsRef<str>) -> Self {
        Self::Thinking(text.as_ref().replace(['\r', '\n'], " "))
    }

    /// The marker's text form (the markdown content is the report itself).
    pub fn to_line(&self) -> String {
        let json = |value: &dyn erased::Json| value.json();
        match self {
            Self::ResearchStart { session_id } => format!(
                "RESEARCH_START:{}",
                serde_json::json!({ "session_id": session_id })
            ),
            Self::Phase(phase) => format!("PHASE:{}", phase.as_str()),
            Self::Progress(p) => format!("PROGRESS:{p}"),
            Self::Thinking(text) => format!("THINKING:{text}"),
            Self::Sources(sources) => format!("SOURCES:{}", json(sources)),
            Self::ChartConfigs(charts) => format!("CHART_CONFIGS:{}", json(charts)),
            Self::FinalResponseStart => "FINAL_RESPONSE_START:".into(),
            Self::MarkdownContentStart => "MARKDOWN_CONTENT_START:".into(),
            Self::MarkdownContent(markdown) => markdown.replace('\r', ""),
            Self::MarkdownContentEnd => "MARKDOWN_CONTENT_END:".into(),
            Self::ResearchComplete(stats) => format!("RESEARCH_COMPLETE:{}", json(stats)),
            Self::Error { message } => {
                format!("ERROR:{}", serde_json::json!({ "message": message }))
            }
        }
    }

    /// Reads a marker from its text form; text without a known prefix (or with a payload
    /// that does not parse) is markdown content.
    pub fn parse(line: &str) -> Self {
        let content = || Self::MarkdownContent(line.to_owned());
        let Some((prefix, rest)) = line.split_once(':') else {
            return content();
        };
        let parsed = match prefix {
            "RESEARCH_START" => Some(Self::ResearchStart {
                session_id: serde_json::from_str::<serde_json::Value>(rest)
                    .ok()
                    .and_then(|v| v["session_id"].as_str().map(str::to_owned))
                    .unwrap_or_default(),
            }),
            "PHASE" => serde_json::from_value(serde_json::Value::String(rest.to_owned()))
                .ok()
                .map(Self::Phase),
            "PROGRESS" => rest.parse().ok().map(Self::Progress),
            "THINKING" => Some(Self::Thinking(rest.to_owned())),
            "SOURCES" => serde_json::from_str(rest).ok().map(Self::Sources),
            "CHART_CONFIGS" => serde_json::from_str(rest).ok().map(Self::ChartConfigs),
            "FINAL_RESPONSE_START" => Some(Self::FinalResponseStart),
            "MARKDOWN_CONTENT_START" => Some(Self::MarkdownContentStart),
            "MARKDOWN_CONTENT_END" => Some(Self::MarkdownContentEnd),
            "RESEARCH_COMPLETE" => serde_json::from_str(rest).ok().map(Self::ResearchComplete),
            "ERROR" => serde_json::from_str::<serde_json::Value>(rest)
                .ok()
                .map(|v| Self::Error {
                    message: v["message"].as_str().unwrap_or_default().to_owned(),
                }),
            _ => None,
        };
        parsed.unwrap_or_else(content)
    }

    /// The marker's name (`PHASE`, ...; `MARKDOWN` for the content), for logs and tests.
    pub fn name(&self) -> &'static str {
        match self {
            Self::ResearchStart { .. } => "RESEARCH_START",
            Self::Phase(_) => "PHASE",
            Self::Progress(_) => "PROGRESS",
            Self::Thinking(_) => "THINKING",
            Self::Sources(_) => "SOURCES",
            Self::ChartConfigs(_) => "CHART_CONFIGS",
            Self::FinalResponseStart => "FINAL_RESPONSE_START",
            Self::MarkdownContentStart => "MARKDOWN_CONTENT_START",
            Self::MarkdownContent(_) => "MARKDOWN",
            Self::MarkdownContentEnd => "MARKDOWN_CONTENT_END",
            Self::ResearchComplete(_) => "RESEARCH_COMPLETE",
            Self::Error { .. } => "ERROR",
        }
    }
}

mod erased {
    /// Serializes to compact JSON (`[]` if it cannot, which our types never do).
    pub trait Json {
        fn json(&self) -> String;
    }

    impl<T: serde::Serialize> Json for T {
        fn json(&self) -> String {
            serde_json::to_string(self).unwrap_or_else(|_| "[]".into())
        }
    }
}

/// The progress (0-100) at `phase` in iteration `iteration` of `max_iterations`: planning
/// at iteration i is `5 + 80·(i−1)/max`; a sub-agent phase keeps its iteration's value;
/// synthesizing is 90, complete 100.
pub(crate) fn progress_for(phase: ResearchPhase, iteration: u32, max_iterations: u32) -> u8 {
    match phase {
        ResearchPhase::Synthesizing => 90,
        ResearchPhase::Complete => 100,
        _ => {
            let max = max_iterations.max(1);
            let done = iteration.saturating_sub(1).min(max);
            (5 + 80 * done / max).min(85) as u8
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_marker_round_trips_through_its_text_form() {
        let markers = [
            Marker::ResearchStart {
                session_id: "research-1".into(),
            },
            Marker::Phase(ResearchPhase::Aggregating),
            Marker::Progress(13),
            Marker::Thinking("Executing aggregator...".into()),
            Marker::Sources(vec![Source {
                title: "A".into(),
                url: "https://example.org/a".into(),
            }]),
            Marker::ChartConfigs(Vec::new()),
            Marker::FinalResponseStart,
            Marker::MarkdownContentStart,
            Marker::MarkdownContent("## Research Report\n\nText".into()),
            Marker::MarkdownContentEnd,
            Marker::ResearchComplete(CompleteStats {
                iterations: 3,
                docs_processed: 50,
                confidence: 0.85,
            }),
            Marker::Error {
                message: "the MCP server stopped".into(),
            },
        ];
        for marker in markers {
            assert_eq!(Marker::parse(&marker.to_line()), marker, "{marker:?}");
        }
    }

    #[test]
    fn text_forms_are_the_seeds() {
        assert_eq!(
            Marker::ResearchComplete(CompleteStats {
                iterations: 3,
                docs_processed: 50,
                confidence: 0.85
            })
            .to_line(),
            r#"RESEARCH_COMPLETE:{"iterations":3,"docs_processed":50,"confidence":0.85}"#
        );
        assert_eq!(
            Marker::ResearchStart {
                session_id: "research-x".into()
            }
            .to_line(),
            r#"RESEARCH_START:{"session_id":"research-x"}"#
        );
        assert_eq!(Marker::thinking("a\nb").to_line(), "THINKING:a b");
        assert_eq!(
            Marker::Error {
                message: "m".into()
            }
            .to_line(),
            r#"ERROR:{"message":"m"}"#
        );
    }

    #[test]
    fn progress_follows_the_formula() {
        assert_eq!(progress_for(ResearchPhase::Planning, 1, 10), 5);
        assert_eq!(progress_for(ResearchPhase::Planning, 2, 10), 13);
        assert_eq!(progress_for(ResearchPhase::Aggregating, 3, 10), 21);
        assert_eq!(progress_for(ResearchPhase::Planning, 50, 10), 85);
        assert_eq!(progress_for(ResearchPhase::Synthesizing, 3, 10), 90);
        assert_eq!(progress_for(ResearchPhase::Complete, 3, 10), 100);
    }
}
