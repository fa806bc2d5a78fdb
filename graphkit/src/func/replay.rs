//! What one run of an entrypoint replays from earlier runs of its task: the results of
//! finished task calls, and which call each resume value answers.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use crate::checkpoint::format::CallRecord;
use crate::context::node_context::NodeContext;
use crate::context::task_link::TaskLink;
use crate::error::{BoxError, Error};

/// Shared by every call of one run of an entrypoint's task.
#[derive(Debug, Default)]
pub(crate) struct Replay {
    /// Results of task calls that finished in an earlier run, by call key.
    results: HashMap<String, Value>,
    /// The answers to each call's interrupts, in the order the call asked them.
    answers: HashMap<String, Vec<Value>>,
    /// How many resume values the task has been given (the number of the next pause).
    pauses: usize,
    /// Where finished calls and pauses are recorded (with a checkpointer saving per step).
    link: Option<Arc<TaskLink>>,
}

impl Replay {
    /// What the task of `ctx` recorded in earlier runs.
    ///
    /// A resume value answers the call that asked the question of its pause. A pause with
    /// no record (with `Durability::Exit` nothing is recorded while the task runs) is
    /// answered to the entrypoint itself, in order, as a node's interrupts are.
    pub(crate) fn of(ctx: &NodeContext) -> Self {
        let mut replay = Self {
            link: ctx.checkpoint.clone(),
            ..Self::default()
        };
        let Some(pad) = &ctx.scratchpad else {
            return replay;
        };
        replay.pauses = pad.resume.len();
        let mut asked: Vec<(&str, usize, usize)> = Vec::new();
        for record in &pad.recorded {
            match record {
                CallRecord::Result { call, result } => {
                    replay.results.insert(call.clone(), result.clone());
                }
                CallRecord::Asked { pause, call, index } if *pause < pad.resume.len() => {
                    asked.push((call, *index, *pause));
                }
                CallRecord::Asked { .. } => {}
            }
        }
        asked.sort_unstable();
        let mut answered = vec![false; pad.resume.len()];
        for (call, _, pause) in asked {
            answered[pause] = true;
            replay
                .answers
                .entry(call.to_owned())
                .or_default()
                .push(pad.resume[pause].clone());
        }
        let unclaimed = pad
            .resume
            .iter()
            .zip(answered)
            .filter(|(_, answered)| !answered)
            .map(|(value, _)| value.clone());
        replay
            .answers
            .entry(String::new())
            .or_default()
            .extend(unclaimed);
        replay
    }

    /// The saved result of call `call`, if it finished in an earlier run.
    pub(crate) fn result(&self, call: &str) -> Option<&Value> {
        self.results.get(call)
    }

    /// The answers to call `call`'s interrupts so far.
    pub(crate) fn answers(&self, call: &str) -> Vec<Value> {
        self.answers.get(call).cloned().unwrap_or_default()
    }

    /// Records that call `call` finished with `result`.
    pub(crate) async fn record_result(&self, call: &str, result: &Value) -> Result<(), Error> {
        let Some(link) = &self.link else {
            return Ok(());
        };
        let record = CallRecord::Result {
            call: call.to_owned(),
            result: result.clone(),
        };
        link.record_call(&record).await
    }

    /// The entrypoint's error as its task reports it: an interrupt raised by one of its
    /// calls is recorded as the question of the task's next pause (so that the resume
    /// value goes to that call), and numbered as that pause.
    pub(crate) async fn task_error(&self, error: BoxError) -> BoxError {
        let mut signal = match error.downcast::<Error>() {
            Ok(error) => match *error {
                Error::Interrupt(signal) => signal,
                other => return Box::new(other),
            },
            Err(other) => return other,
        };
        if let (Some(call), Some(link)) = (signal.call.take(), &self.link) {
            let record = CallRecord::Asked {
                pause: self.pauses,
                call: call.to_string(),
                index: signal.index,
            };
            if let Err(error) = link.record_call(&record).await {
                return Box::new(error);
            }
        }
        signal.index = self.pauses;
        Box::new(Error::Interrupt(signal))
    }
}
