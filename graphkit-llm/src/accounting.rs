//! Accounting: totals per run (calls, tokens, latency) and cost estimates from a price
//! table. The per-call tracing spans and events are in `trace`.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;

use crate::error::{LlmError, Result};
use crate::message::{AssistantMessage, Usage};
use crate::model::ChatModel;
use crate::request::ChatRequest;
use crate::stream::ChatStream;

/// Prices per million tokens, by model name, for cost estimates.
///
/// ```
/// use graphkit_llm::{PriceTable, Usage};
///
/// let prices = PriceTable::new().with("gpt-4o", 2.50, 10.00);
/// let cost = prices.cost("gpt-4o", Usage { input_tokens: 1_000_000, output_tokens: 100_000 });
/// assert_eq!(cost, Some(3.5));
/// assert_eq!(prices.cost("unknown", Usage::default()), None);
/// ```
#[derive(Debug, Clone, Default)]
pub struct PriceTable {
    prices: HashMap<String, (f64, f64)>,
}

impl PriceTable {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a model's prices, in currency units per million input and output tokens.
    #[must_use]
    pub fn with(
        mut self,
        model: impl Into<String>,
        input_per_million: f64,
        output_per_million: f64,
    ) -> Self {
        self.prices
            .insert(model.into(), (input_per_million, output_per_million));
        self
    }

    /// The estimated cost of `usage` on `model`, if the table knows the model.
    pub fn cost(&self, model: &str, usage: Usage) -> Option<f64> {
        let (input, output) = self.prices.get(model)?;
        Some(
            (usage.input_tokens as f64 * input + usage.output_tokens as f64 * output) / 1_000_000.0,
        )
    }
}

/// Totals for one model (or for all of them).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CallTotals {
    /// Calls that returned a reply.
    pub calls: u64,
    /// Calls that failed.
    pub failures: u64,
    /// Tokens used.
    pub usage: Usage,
    /// Time spent waiting for models.
    pub duration: Duration,
    /// Estimated cost, when a price table knows the model.
    pub cost: Option<f64>,
}

impl CallTotals {
    fn add(&mut self, other: &CallTotals) {
        self.calls += other.calls;
        self.failures += other.failures;
        self.usage += other.usage;
        self.duration += other.duration;
        if let Some(cost) = other.cost {
            *self.cost.get_or_insert(0.0) += cost;
        }
    }
}

/// Usage totals of a run (or of anything else the meter was shared with).
///
/// Create one per run, wrap the run's models with [`meter`](Self::meter), and read
/// [`totals`](Self::totals) at the end. Clones share the same totals.
///
/// ```
/// use graphkit_llm::{ChatModel, Message, ScriptedModel, UsageMeter};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let meter = UsageMeter::new();
/// let model = meter.meter(ScriptedModel::new(["a", "b"]));
/// model.invoke(&[Message::user("1")]).await?;
/// model.invoke(&[Message::user("2")]).await?;
/// assert_eq!(meter.totals().calls, 2);
/// # Ok::<(), graphkit_llm::LlmError>(()) }).unwrap();
/// ```
#[derive(Debug, Clone, Default)]
pub struct UsageMeter {
    per_model: Arc<Mutex<BTreeMap<String, CallTotals>>>,
    prices: Arc<PriceTable>,
}

impl UsageMeter {
    /// A meter without prices.
    pub fn new() -> Self {
        Self::default()
    }

    /// A meter that estimates costs from `prices`.
    pub fn with_prices(prices: PriceTable) -> Self {
        Self {
            prices: Arc::new(prices),
            ..Self::default()
        }
    }

    /// Wraps `model` so its calls count on this meter.
    pub fn meter<M: ChatModel>(&self, model: M) -> Metered<M> {
        Metered {
            model,
            meter: self.clone(),
        }
    }

    /// Totals over all models.
    pub fn totals(&self) -> CallTotals {
        let mut all = CallTotals::default();
        for totals in self.lock().values() {
            all.add(totals);
        }
        all
    }

    /// Totals per model name.
    pub fn per_model(&self) -> BTreeMap<String, CallTotals> {
        self.lock().clone()
    }

    fn record(
        &self,
        model: &str,
        outcome: std::result::Result<Option<Usage>, &LlmError>,
        started: Instant,
    ) {
        let mut per_model = self.lock();
        let totals = per_model.entry(model.to_owned()).or_default();
        totals.duration += started.elapsed();
        match outcome {
            Ok(usage) => {
                let usage = usage.unwrap_or_default();
                totals.calls += 1;
                totals.usage += usage;
                if let Some(cost) = self.prices.cost(model, usage) {
                    *totals.cost.get_or_insert(0.0) += cost;
                }
            }
            Err(_) => totals.failures += 1,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, CallTotals>> {
        // A panic while holding the lock cannot leave the totals half-written; keep counting.
        self.per_model
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A model whose calls count on a [`UsageMeter`].
#[derive(Debug, Clone)]
pub struct Metered<M> {
    model: M,
    meter: UsageMeter,
}

#[async_trait]
impl<M: ChatModel> ChatModel for Metered<M> {
    fn model_name(&self) -> &str {
        self.model.model_name()
    }

    async fn chat(&self, request: ChatRequest) -> Result<AssistantMessage> {
        let started = Instant::now();
        let result = self.model.chat(request).await;
        self.meter
            .record(self.model_name(), result.as_ref().map(|m| m.usage), started);
        result
    }

    async fn chat_stream(&self, request: ChatRequest) -> Result<ChatStream> {
        let started = Instant::now();
        match self.model.chat_stream(request).await {
            Ok(stream) => {
                let (meter, model) = (self.meter.clone(), self.model_name().to_owned());
                Ok(stream.on_finish(move |outcome, _| meter.record(&model, outcome, started)))
            }
            Err(err) => {
                self.meter.record(self.model_name(), Err(&err), started);
                Err(err)
            }
        }
    }
}
