//! Property tests: whatever a server sends, the providers' reply and stream parsers
//! return a value or an error, and never panic (issue 18).

use proptest::prelude::*;
use serde_json::{Value, json};

use super::{Step, anthropic, ollama, openai};
use crate::chunk::MessageAssembler;

/// Arbitrary JSON, biased towards the keys and shapes the providers read.
fn arb_json() -> impl Strategy<Value = Value> {
    let key = prop_oneof![
        Just("choices"),
        Just("message"),
        Just("delta"),
        Just("content"),
        Just("tool_calls"),
        Just("function"),
        Just("arguments"),
        Just("name"),
        Just("id"),
        Just("index"),
        Just("usage"),
        Just("prompt_tokens"),
        Just("completion_tokens"),
        Just("input_tokens"),
        Just("output_tokens"),
        Just("type"),
        Just("content_block"),
        Just("text"),
        Just("input"),
        Just("partial_json"),
        Just("stop_reason"),
        Just("finish_reason"),
        Just("done"),
        Just("error"),
        Just("model"),
        Just("text_delta"),
        Just("tool_use"),
        Just("message_delta"),
        Just("content_block_delta"),
        Just("content_block_start"),
        Just("message_start"),
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(|f| json!(f)),
        "[ -~]{0,12}".prop_map(Value::from),
        key.clone().prop_map(Value::from),
    ];
    leaf.prop_recursive(5, 64, 6, move |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::vec((key.clone(), inner), 0..6).prop_map(|pairs| Value::Object(
                pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
            )),
        ]
    })
}

/// Feeds a payload to a stream parser and, for chunks, to the assembler.
fn feed(assembler: &mut MessageAssembler, step: crate::error::Result<Step>) {
    match step {
        Ok(Step::Chunk(chunk) | Step::Done(Some(chunk))) => assembler.push(&chunk),
        Ok(Step::Skip | Step::Done(None)) | Err(_) => {}
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn reply_parsers_never_panic(body in arb_json()) {
        let _ = openai::parse_reply("openai", &body);
        let _ = anthropic::parse_reply(&body, None);
        let _ = anthropic::parse_reply(&body, Some("answer"));
        let _ = ollama::parse_reply(&body);
    }

    #[test]
    fn stream_parsers_never_panic_on_json(payloads in proptest::collection::vec(arb_json(), 1..8)) {
        let (mut a, mut b) = (MessageAssembler::new(), MessageAssembler::new());
        for payload in &payloads {
            let text = payload.to_string();
            feed(&mut a, openai::parse_stream_payload("openai", &text));
            feed(&mut b, anthropic::parse_stream_payload(&text));
        }
        let _ = a.finish("x".into());
        let _ = b.finish("y".into());
    }

    #[test]
    fn stream_parsers_never_panic_on_any_text(text in "\\PC{0,200}") {
        let _ = openai::parse_stream_payload("openai", &text);
        let _ = anthropic::parse_stream_payload(&text);
        let _ = super::parse_payload("ollama", &text).map(|v| ollama::parse_reply(&v));
    }
}
