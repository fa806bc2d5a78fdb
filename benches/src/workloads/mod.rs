//! The workloads of WORKLOADS.md §1–§8: each module builds its graph for `sync` (sync nodes,
//! `invoke_blocking`) and `async` (async nodes, `invoke_with`), gives the input, and
//! computes the checksum of the final state.

pub mod checkpoint;
pub mod checkpoint_floor;
pub mod concurrent;
pub mod fanout_send;
pub mod fanout_static;
pub mod parity;
pub mod react;
pub mod reducer;
pub mod sequential;
pub mod wide_state;

use crate::checksum::{Checksum, csv, fnv};

/// The W2/W3 checksum: `{"len_items", "sum_items", "total", "count", "fnv_items"}`.
pub fn items_checksum(items: &[i64], total: i64, count: i64) -> Checksum {
    Checksum::new()
        .with("len_items", items.len())
        .with("sum_items", items.iter().sum::<i64>())
        .with("total", total)
        .with("count", count)
        .with("fnv_items", fnv(&csv(items)))
}
