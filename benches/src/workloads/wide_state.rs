//! W5 `wide_state`: a 100-field state; a ring of 10 nodes each reads everything and writes
//! five fields.

use std::sync::Arc;

use graphkit::{CompiledGraph, END, START, State, StateGraph, SyncNode};
use serde::{Deserialize, Serialize};

use crate::case::{Case, Mode, graph_case};
use crate::checksum::{Checksum, csv, fnv};

/// Integer fields `f00..f89`.
pub const INT_FIELDS: usize = 90;
/// List fields `l0..l8`.
pub const LIST_FIELDS: usize = 9;
/// Nodes in the ring.
pub const NODES: usize = 10;

macro_rules! wide_state {
    (ints: [$($int:ident = $i:literal),* $(,)?], lists: [$($list:ident = $j:literal),* $(,)?]) => {
        /// W5's state: `step`, 90 last-value integers and 9 appended lists.
        #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
        pub struct Wide {
            /// The step counter that drives the ring.
            pub step: i64,
            $(
                #[allow(missing_docs)]
                pub $int: i64,
            )*
            $(
                #[allow(missing_docs)]
                #[reducer(append)]
                pub $list: Vec<i64>,
            )*
        }

        impl Wide {
            /// The initial state: `step = 0`, `f{i} = i`, empty lists.
            pub fn initial() -> Self {
                Self { step: 0, $($int: $i,)* $($list: Vec::new(),)* }
            }

            /// `f{index}`.
            pub fn int(&self, index: usize) -> i64 {
                match index {
                    $($i => self.$int,)*
                    _ => 0,
                }
            }

            /// `f00..f89` in order.
            pub fn ints(&self) -> [i64; INT_FIELDS] {
                [$(self.$int),*]
            }

            /// `l0..l8` in order.
            pub fn lists(&self) -> [&[i64]; LIST_FIELDS] {
                [$(&self.$list),*]
            }
        }

        impl WideUpdate {
            /// Sets `f{index}`.
            fn set_int(self, index: usize, value: i64) -> Self {
                match index {
                    $($i => self.$int(value),)*
                    _ => self,
                }
            }

            /// Appends `value` to `l{index}`.
            fn push_list(self, index: usize, value: i64) -> Self {
                match index {
                    $($j => self.$list(vec![value]),)*
                    _ => self,
                }
            }
        }
    };
}

wide_state! {
    ints: [
        f00 = 0, f01 = 1, f02 = 2, f03 = 3, f04 = 4, f05 = 5, f06 = 6, f07 = 7, f08 = 8, f09 = 9,
        f10 = 10, f11 = 11, f12 = 12, f13 = 13, f14 = 14, f15 = 15, f16 = 16, f17 = 17, f18 = 18, f19 = 19,
        f20 = 20, f21 = 21, f22 = 22, f23 = 23, f24 = 24, f25 = 25, f26 = 26, f27 = 27, f28 = 28, f29 = 29,
        f30 = 30, f31 = 31, f32 = 32, f33 = 33, f34 = 34, f35 = 35, f36 = 36, f37 = 37, f38 = 38, f39 = 39,
        f40 = 40, f41 = 41, f42 = 42, f43 = 43, f44 = 44, f45 = 45, f46 = 46, f47 = 47, f48 = 48, f49 = 49,
        f50 = 50, f51 = 51, f52 = 52, f53 = 53, f54 = 54, f55 = 55, f56 = 56, f57 = 57, f58 = 58, f59 = 59,
        f60 = 60, f61 = 61, f62 = 62, f63 = 63, f64 = 64, f65 = 65, f66 = 66, f67 = 67, f68 = 68, f69 = 69,
        f70 = 70, f71 = 71, f72 = 72, f73 = 73, f74 = 74, f75 = 75, f76 = 76, f77 = 77, f78 = 78, f79 = 79,
        f80 = 80, f81 = 81, f82 = 82, f83 = 83, f84 = 84, f85 = 85, f86 = 86, f87 = 87, f88 = 88, f89 = 89
    ],
    lists: [l0 = 0, l1 = 1, l2 = 2, l3 = 3, l4 = 4, l5 = 5, l6 = 6, l7 = 7, l8 = 8]
}

/// Node `n{k}`: `step + 1`, three integers `f[(3s + j) mod 90] += s + 1`, and `s` appended
/// to `l{k mod 9}`.
fn node(state: &Wide, k: usize) -> WideUpdate {
    let s = state.step;
    let mut update = WideUpdate::new().step(s + 1);
    for j in 0..3 {
        let index = (3 * s as usize + j) % INT_FIELDS;
        update = update.set_int(index, state.int(index) + s + 1);
    }
    update.push_list(k % LIST_FIELDS, s)
}

/// `START → n0 → … → n9 →? (step < steps ? n0 : END)`.
pub fn builder(steps: i64, mode: Mode) -> StateGraph<Wide> {
    let mut graph = StateGraph::<Wide>::new();
    for k in 0..NODES {
        let name = format!("n{k}");
        match mode {
            Mode::Sync => graph.add_node(&name, SyncNode::new(move |state: &Wide| node(state, k))),
            Mode::Async => graph.add_node(
                &name,
                move |state: Arc<Wide>| async move { node(&state, k) },
            ),
        };
        if k > 0 {
            graph.add_edge(format!("n{}", k - 1).as_str(), &name);
        }
    }
    let last = format!("n{}", NODES - 1);
    graph.add_edge(START, "n0").add_conditional_edges(
        &last,
        move |state: &Wide| if state.step < steps { "n0" } else { END },
        ["n0", END],
    );
    graph
}

/// [`builder`], compiled.
pub fn graph(steps: i64, mode: Mode) -> Result<CompiledGraph<Wide>, graphkit::BuildError> {
    builder(steps, mode).compile()
}

/// Every field given explicitly.
pub fn input() -> WideUpdate {
    Wide::initial().into()
}

/// `{"step", "sum_f", "fnv_f", "list_lens", "sum_lists", "fnv_lists"}`.
pub fn checksum(state: &Wide) -> Checksum {
    let ints = state.ints();
    let lists = state.lists();
    let joined: Vec<String> = lists.iter().map(|l| csv(l.iter())).collect();
    Checksum::new()
        .with("step", state.step)
        .with("sum_f", ints.iter().sum::<i64>())
        .with("fnv_f", fnv(&csv(ints)))
        .with(
            "list_lens",
            lists.iter().map(|l| l.len()).collect::<Vec<_>>(),
        )
        .with(
            "sum_lists",
            lists.iter().flat_map(|l| l.iter()).sum::<i64>(),
        )
        .with("fnv_lists", fnv(&joined.join(";")))
}

/// The case `wide_state_100x{steps}_{mode}`.
pub fn case(steps: i64, mode: Mode) -> Case {
    graph_case(
        format!("wide_state_100x{steps}_{}", mode.as_str()),
        "wide_state",
        mode,
        move |mode| graph(steps, mode),
        input,
        checksum,
    )
    .param("F", 100)
    .param("S", steps)
    .steps(steps as u64)
    .items(steps as u64, "node")
}
