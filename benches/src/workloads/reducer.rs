//! W6 `reducer`: 10,000 items through the append and merge-by-key reducers, either one
//! batch per step (`loop`) or 100 concurrent writers in one step (`fanout`).

use std::collections::HashMap;
use std::sync::Arc;

use graphkit::nodes::SyncNodeWithContext;
use graphkit::{
    CompiledGraph, END, Input, KeyedUpdate, NodeContext, START, SendTo, State, StateGraph, SyncNode,
};
use serde::{Deserialize, Serialize};

use crate::case::{Case, Mode, graph_case};
use crate::checksum::{Checksum, fnv};

/// Items in total.
pub const ITEMS: i64 = 10_000;
/// Items per batch.
pub const BATCH: i64 = 100;
/// Batches.
pub const BATCHES: i64 = ITEMS / BATCH;

/// One item: `{id: "item-{n mod U}", v: n}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Item {
    /// `item-{n mod U}`.
    pub id: ShortId,
    /// `n`.
    pub v: i64,
}

/// A short id kept inline, as small-string crates (`compact_str`, `smol_str`) keep short
/// text: building `item-{n}` allocates nothing, and the merge map's key is a 32-byte copy
/// of the item's id. (An id on the heap cost a `malloc` of ~190 instructions an item, most
/// of what the append cases did.) As text in JSON, in `Display` and in `Debug`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct ShortId {
    bytes: [u8; SHORT_ID_MAX],
    len: u8,
}

/// The longest [`ShortId`]: `item-` and any `i64`.
const SHORT_ID_MAX: usize = 31;

const ID_PREFIX: &str = "item-";

impl ShortId {
    /// `text` inline, or `None` when it is longer than 31 bytes.
    pub fn new(text: &str) -> Option<Self> {
        let mut bytes = [0u8; SHORT_ID_MAX];
        bytes
            .get_mut(..text.len())?
            .copy_from_slice(text.as_bytes());
        Some(Self {
            bytes,
            len: text.len() as u8,
        })
    }

    /// `item-{n}`, written with `itoa` (not `format!`, which goes through
    /// `fmt::Arguments`).
    pub fn item(n: i64) -> Self {
        let mut digits = itoa::Buffer::new();
        let digits = digits.format(n).as_bytes();
        let mut bytes = [0u8; SHORT_ID_MAX];
        let end = ID_PREFIX.len() + digits.len();
        bytes[..ID_PREFIX.len()].copy_from_slice(ID_PREFIX.as_bytes());
        bytes[ID_PREFIX.len()..end].copy_from_slice(digits);
        Self {
            bytes,
            len: end as u8,
        }
    }

    /// The id's bytes (UTF-8: an id is only made from a `str`).
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        std::str::from_utf8(self.as_bytes()).unwrap_or_default()
    }
}

/// The id's bytes only, as `str` hashes (not the unused rest of the buffer: hashing all 32
/// bytes cost more than the rest of an insert).
impl std::hash::Hash for ShortId {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write(self.as_bytes());
        state.write_u8(0xff);
    }
}

/// Byte by byte, as the checksum sorts keys.
impl Ord for ShortId {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_bytes().cmp(other.as_bytes())
    }
}

impl PartialOrd for ShortId {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl std::fmt::Display for ShortId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::fmt::Debug for ShortId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.as_str(), f)
    }
}

impl Serialize for ShortId {
    fn serialize<Z: serde::Serializer>(&self, serializer: Z) -> Result<Z::Ok, Z::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ShortId {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = std::borrow::Cow::<'de, str>::deserialize(deserializer)?;
        Self::new(&text).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "an item id holds at most {SHORT_ID_MAX} bytes, not {}",
                text.len()
            ))
        })
    }
}

/// The items of batch `batch` with `unique` distinct keys.
fn batch_items(batch: i64, unique: i64) -> impl Iterator<Item = Item> {
    (batch * BATCH..(batch + 1) * BATCH).map(move |n| Item {
        id: ShortId::item(n % unique),
        v: n,
    })
}

/// The merge variant's map: ids to items, hashed with foldhash (short keys hash several
/// times faster than with std's SipHash; a map field takes any `BuildHasher`).
pub type ById = HashMap<ShortId, Item, foldhash::fast::RandomState>;

/// Which reducer a case exercises.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reducer {
    /// `log: Vec<Item>` with `#[reducer(append)]`, U = 10,000.
    Append,
    /// `by_id: HashMap<ShortId, Item, _>` with `#[reducer(merge_by_key)]`, U = 5,000.
    Merge,
}

impl Reducer {
    /// `append` or `merge`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Append => "append",
            Self::Merge => "merge",
        }
    }

    /// Distinct keys.
    pub fn unique(self) -> i64 {
        match self {
            Self::Append => 10_000,
            Self::Merge => 5_000,
        }
    }
}

/// How the batches reach the reducer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// One node, 100 steps, one batch per step.
    Loop,
    /// 100 `Send` tasks in one step.
    Fanout,
}

impl Shape {
    /// `loop` or `fanout`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Loop => "loop",
            Self::Fanout => "fanout",
        }
    }
}

/// The packet of a fan-out task.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct BatchInput {
    /// Which batch to produce.
    pub batch: i64,
}

fn fan() -> Vec<SendTo> {
    (0..BATCHES)
        .map(|batch| SendTo::new("produce", BatchInput { batch }))
        .collect()
}

/// Adds the nodes and edges of `shape` to `graph`: `produce(state)` for the loop,
/// `produce_batch(batch)` for the fan-out.
fn wire<S: State>(
    graph: &mut StateGraph<S>,
    shape: Shape,
    mode: Mode,
    batch_of: fn(&S) -> i64,
    produce: fn(&S) -> S::Update,
    produce_batch: fn(i64) -> S::Update,
) where
    S::Update: graphkit::nodes::IntoNodeOutput<S>,
{
    match (shape, mode) {
        (Shape::Loop, Mode::Sync) => graph.add_node("produce", SyncNode::new(produce)),
        (Shape::Loop, Mode::Async) => {
            graph.add_node(
                "produce",
                move |state: Arc<S>| async move { produce(&state) },
            )
        }
        (Shape::Fanout, Mode::Sync) => graph.add_node(
            "produce",
            SyncNodeWithContext::new(move |_: &S, ctx: &NodeContext| {
                let input = ctx
                    .input::<BatchInput>()
                    .ok_or("`produce` needs a `BatchInput` packet")?;
                Ok::<_, &str>(produce_batch(input.batch))
            }),
        ),
        (Shape::Fanout, Mode::Async) => graph.add_node(
            "produce",
            move |Input(input): Input<BatchInput>| async move { produce_batch(input.batch) },
        ),
    };
    match shape {
        Shape::Loop => graph.add_edge(START, "produce").add_conditional_edges(
            "produce",
            move |state: &S| {
                if batch_of(state) < BATCHES {
                    "produce"
                } else {
                    END
                }
            },
            ["produce", END],
        ),
        Shape::Fanout => graph
            .add_conditional_edges(START, |_: &S| fan(), ["produce"])
            .add_edge("produce", END),
    };
}

/// The append variant's state.
#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
pub struct AppendLog {
    /// The next batch (loop shape).
    pub batch: i64,
    /// Every item, in batch order.
    #[reducer(append)]
    pub log: Vec<Item>,
}

/// The merge variant's state.
#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
pub struct MergeMap {
    /// The next batch (loop shape).
    pub batch: i64,
    /// Items by id; later batches overwrite earlier ones.
    #[reducer(merge_by_key)]
    pub by_id: ById,
}

fn append_batch(batch: i64) -> AppendLogUpdate {
    AppendLogUpdate::new().log(batch_items(batch, Reducer::Append.unique()).collect::<Vec<_>>())
}

fn merge_batch(batch: i64) -> MergeMapUpdate {
    let pairs = batch_items(batch, Reducer::Merge.unique()).map(|item| (item.id, item));
    MergeMapUpdate::new().by_id(KeyedUpdate::upsert(pairs))
}

/// The append graph of `shape`.
pub fn append_graph(
    shape: Shape,
    mode: Mode,
) -> Result<CompiledGraph<AppendLog>, graphkit::BuildError> {
    let mut graph = StateGraph::<AppendLog>::new();
    wire(
        &mut graph,
        shape,
        mode,
        |s| s.batch,
        |s| append_batch(s.batch).batch(s.batch + 1),
        append_batch,
    );
    graph.compile()
}

/// The merge graph of `shape`.
pub fn merge_graph(
    shape: Shape,
    mode: Mode,
) -> Result<CompiledGraph<MergeMap>, graphkit::BuildError> {
    let mut graph = StateGraph::<MergeMap>::new();
    wire(
        &mut graph,
        shape,
        mode,
        |s| s.batch,
        |s| merge_batch(s.batch).batch(s.batch + 1),
        merge_batch,
    );
    graph.compile()
}

fn lines<'a>(items: impl Iterator<Item = &'a Item>) -> String {
    items
        .map(|it| format!("{}:{}", it.id, it.v))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `{"len", "sum_v", "fnv"}` over the log in list order.
pub fn append_checksum(state: &AppendLog) -> Checksum {
    Checksum::new()
        .with("len", state.log.len())
        .with("sum_v", state.log.iter().map(|it| it.v).sum::<i64>())
        .with("fnv", fnv(&lines(state.log.iter())))
}

/// `{"len", "sum_v", "fnv"}` over the map in byte order of the keys.
pub fn merge_checksum(state: &MergeMap) -> Checksum {
    let mut keys: Vec<&ShortId> = state.by_id.keys().collect();
    keys.sort_unstable();
    Checksum::new()
        .with("len", state.by_id.len())
        .with("sum_v", state.by_id.values().map(|it| it.v).sum::<i64>())
        .with(
            "fnv",
            fnv(&lines(keys.into_iter().filter_map(|k| state.by_id.get(k)))),
        )
}

/// The case `reducer_{reducer}_{shape}_10k_{mode}`.
pub fn case(reducer: Reducer, shape: Shape, mode: Mode) -> Case {
    let name = format!(
        "reducer_{}_{}_10k_{}",
        reducer.as_str(),
        shape.as_str(),
        mode.as_str()
    );
    let case = match reducer {
        Reducer::Append => graph_case(
            name,
            "reducer",
            mode,
            move |mode| append_graph(shape, mode),
            || AppendLogUpdate::new().batch(0).log(Vec::new()),
            append_checksum,
        ),
        Reducer::Merge => graph_case(
            name,
            "reducer",
            mode,
            move |mode| merge_graph(shape, mode),
            || MergeMapUpdate::new().batch(0).by_id(ById::default()),
            merge_checksum,
        ),
    };
    let steps = match shape {
        Shape::Loop => BATCHES as u64,
        Shape::Fanout => 1,
    };
    case.param("N", ITEMS)
        .param("B", BATCH)
        .param("U", reducer.unique())
        .steps(steps)
        .items(ITEMS as u64, "item")
}
