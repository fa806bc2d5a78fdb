//! Ask a model one question and print its reply and token usage.
//!
//! ```text
//! cargo run -p graphkit-llm --example chat -- --model openai:gpt-4o "What is a monad?"
//! cargo run -p graphkit-llm --example chat -- --model openai-compatible:http://127.0.0.1:8091/v1#local "Hi"
//! cargo run -p graphkit-llm --example chat -- --model ollama:qwen2.5 --stream "Tell me a joke"
//! ```

use std::io::Write;
use std::process::ExitCode;

use futures::StreamExt;
use graphkit_llm::{CallOptions, ChatModel, ChatRequest, Message, init_chat_model};

const USAGE: &str = "usage: chat --model SPEC [--system TEXT] [--max-tokens N] [--stream] QUESTION
  SPEC: openai:MODEL | anthropic:MODEL | ollama:MODEL | openai-compatible:BASE_URL#MODEL";

struct Args {
    model: String,
    system: Option<String>,
    stream: bool,
    max_tokens: Option<u32>,
    question: String,
}

fn parse_args() -> Result<Args, String> {
    let mut model = None;
    let mut system = None;
    let mut stream = false;
    let mut max_tokens = None;
    let mut words = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--model" | "-m" => model = Some(args.next().ok_or("--model needs a spec")?),
            "--system" => system = Some(args.next().ok_or("--system needs a text")?),
            "--stream" => stream = true,
            "--max-tokens" => {
                let n = args.next().ok_or("--max-tokens needs a number")?;
                max_tokens = Some(
                    n.parse()
                        .map_err(|_| format!("--max-tokens: {n:?} is not a number"))?,
                );
            }
            "--help" | "-h" => return Err(String::new()),
            _ => words.push(arg),
        }
    }
    let model = model.ok_or("missing --model")?;
    if words.is_empty() {
        return Err("missing the question".into());
    }
    Ok(Args {
        model,
        system,
        stream,
        max_tokens,
        question: words.join(" "),
    })
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    // RUST_LOG picks what is logged (for example RUST_LOG=graphkit=debug); off by default.
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let args = match parse_args() {
        Ok(args) => args,
        Err(problem) => {
            if !problem.is_empty() {
                eprintln!("error: {problem}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> Result<(), graphkit_llm::LlmError> {
    let model = init_chat_model(&args.model)?;
    let mut history = Vec::new();
    if let Some(system) = args.system {
        history.push(Message::system(system));
    }
    history.push(Message::user(args.question));
    let mut request = ChatRequest::new(history);
    if let Some(max) = args.max_tokens {
        request.options = CallOptions::new().max_tokens(max);
    }

    let reply = if args.stream {
        let mut stream = model.stream_request(request).await?;
        let mut stdout = std::io::stdout();
        while let Some(chunk) = stream.next().await {
            print!("{}", chunk?.content);
            let _ = stdout.flush();
        }
        println!();
        stream.final_message().await?
    } else {
        let reply = model.invoke_request(request).await?;
        println!("{}", reply.content);
        reply
    };
    for call in &reply.tool_calls {
        println!("[tool call] {}({})", call.name, call.arguments);
    }
    match reply.usage {
        Some(usage) => println!(
            "usage: {} input + {} output = {} tokens (model {}, finish: {})",
            usage.input_tokens,
            usage.output_tokens,
            usage.total(),
            reply.model.as_deref().unwrap_or(model.model_name()),
            reply.finish_reason.as_deref().unwrap_or("unknown"),
        ),
        None => println!("usage: not reported by the server"),
    }
    Ok(())
}
